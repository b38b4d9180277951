# SPDX-License-Identifier: Apache-2.0
"""ament_python build of project_ghost_feedback (version kept in sync with package.xml)."""

from glob import glob
import os

from setuptools import find_packages, setup

package_name = 'project_ghost_feedback'
here = os.path.dirname(os.path.abspath(__file__))


def _files(pattern):
    """Return the files matching pattern, relative to this directory (empty list if none)."""
    return sorted(
        os.path.relpath(path, here) for path in glob(os.path.join(here, pattern))
        if os.path.isfile(path)
    )


data_files = [
    ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
    ('share/' + package_name, ['package.xml']),
]
for sub_dir, pattern in (('launch', 'launch/*.py'), ('config', 'config/*.yaml')):
    matched = _files(pattern)
    if matched:
        data_files.append((os.path.join('share', package_name, sub_dir), matched))

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=data_files,
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='project_ghost_feedback maintainers',
    maintainer_email='ghost-feedback@example.com',
    description='Closed-loop feedback on an estimator self-assessment (ROS 2).',
    license='Apache-2.0',
    tests_require=['pytest'],
    entry_points={
        'console_scripts': [
            'feedback_node = project_ghost_feedback.ros.feedback_node:main',
            'ghost-feedback = project_ghost_feedback.cli:main',
        ],
    },
)
