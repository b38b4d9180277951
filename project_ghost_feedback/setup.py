# SPDX-License-Identifier: Apache-2.0
"""ament_python build of project_ghost_feedback (version kept in sync with package.xml)."""

from glob import glob
import os

from setuptools import find_packages, setup

package_name = 'project_ghost_feedback'

data_files = [
    ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
    ('share/' + package_name, ['package.xml']),
]
# launch/ and config/ may be empty (or absent in a fresh clone): add them only when they match.
# isfile() also drops dangling symlinks that --symlink-install leaves in build/ for deleted files.
for sub_dir, pattern in (('launch', '*.py'), ('config', '*.yaml')):
    matched = sorted(path for path in glob(os.path.join(sub_dir, pattern)) if os.path.isfile(path))
    if matched:
        data_files.append((os.path.join('share', package_name, sub_dir), matched))

setup(
    name=package_name,
    version='0.6.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=data_files,
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='project_ghost_feedback maintainers',
    maintainer_email='ghost-feedback@example.com',
    description='Closed-loop feedback on an estimator self-assessment (ROS 2).',
    license='Apache-2.0',
    extras_require={'test': ['pytest', 'hypothesis']},
    entry_points={
        'console_scripts': [
            'feedback_node = project_ghost_feedback.ros.feedback_node:main',
            'outcome_bridge = project_ghost_feedback.ros.outcome_bridge_node:main',
            'innovation_bridge = project_ghost_feedback.ros.innovation_bridge_node:main',
            'navsat_bridge = project_ghost_feedback.ros.navsat_bridge_node:main',
            'ghost-feedback = project_ghost_feedback.cli:main',
        ],
    },
)
