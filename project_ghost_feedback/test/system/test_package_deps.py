# SPDX-License-Identifier: Apache-2.0
"""Every import of the package is declared in package.xml, by its rosdep key.

The sources (package, launch files, setup.py and tests) are parsed with ``ast``; each top-level
module that is neither the standard library nor this package maps to its rosdep key below, and
that key must be a dependency in package.xml (runtime imports: exec_depend or depend; test
imports: any of them or test_depend). A new import without a mapping fails here, so it cannot go
undeclared. The keys were checked against ros/rosdistro (rosdep/python.yaml, jazzy/distribution
.yaml) at commit 8468e88 (2026-08-22). Modules without any rosdep key must be named in the
docs/node.md's "For ROS 2 users" section with their pip command.
"""

import ast
import pathlib
import sys
import xml.etree.ElementTree as ElementTree

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
README = PACKAGE_DIR.parent / 'README.md'
NODE_DOC = README.parent / 'docs' / 'node.md'
# This package, and the sibling test modules a test imports helpers from (e.g. test_faults).
OWN = {'project_ghost_feedback', 'support'} | {
    path.stem for path in (PACKAGE_DIR / 'test').rglob('*.py')}

ROSDEP_KEYS = {
    'ament_flake8': 'ament_flake8',
    'ament_index_python': 'ament_index_python',
    'ament_pep257': 'ament_pep257',
    'builtin_interfaces': 'builtin_interfaces',
    'diagnostic_msgs': 'diagnostic_msgs',
    'geometry_msgs': 'geometry_msgs',
    'hypothesis': 'python3-hypothesis',
    'launch': 'launch',
    'launch_ros': 'launch_ros',
    'lz4': 'python3-lz4',
    'matplotlib': 'python3-matplotlib',
    'mcap_ros2': 'mcap-ros2-support',
    'nav_msgs': 'nav_msgs',
    'sensor_msgs': 'sensor_msgs',
    'numpy': 'python3-numpy',
    'project_ghost_feedback_msgs': 'project_ghost_feedback_msgs',
    'psutil': 'python3-psutil',
    'pytest': 'python3-pytest',
    'rcl_interfaces': 'rcl_interfaces',
    'rclpy': 'rclpy',
    'rosbag2_interfaces': 'rosbag2_interfaces',
    'rosbags': 'python3-rosbags-pip',
    'rosgraph_msgs': 'rosgraph_msgs',
    'rosidl_runtime_py': 'rosidl_runtime_py',
    'ruamel': 'python3-ruamel.yaml',
    'setuptools': 'python3-setuptools',
    'std_msgs': 'std_msgs',
    'std_srvs': 'std_srvs',
    'tf2_msgs': 'tf2_msgs',
    'tf2_py': 'tf2_py',
    'tf2_ros': 'tf2_ros_py',
    'tqdm': 'python3-tqdm',
    'yaml': 'python3-yaml',
    'zstandard': 'python3-zstandard',
}
"""Top-level module -> rosdep key."""

NO_ROSDEP_KEY = {
    'dask': 'dask',
    'distributed': 'distributed',
    'mcap': 'mcap',
    'ruff': 'ruff',
}
"""Top-level module -> PyPI name, for modules rosdep has no key for (docs/node.md says how)."""


def _imports(paths):
    """Return {top-level module: sorted file names} of the absolute imports in ``paths``."""
    found = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split('.')[0]
                if top not in sys.stdlib_module_names and top not in OWN:
                    found.setdefault(top, set()).add(path.name)
    return {top: sorted(files) for top, files in found.items()}


def _depends(*tags):
    """Return the package.xml dependency keys under the given tags."""
    root = ElementTree.parse(PACKAGE_DIR / 'package.xml').getroot()
    return {element.text.strip() for tag in tags for element in root.iter(tag)}


RUNTIME_FILES = sorted((PACKAGE_DIR / 'project_ghost_feedback').rglob('*.py')) + sorted(
    (PACKAGE_DIR / 'launch').glob('*.py'))
TEST_FILES = sorted((PACKAGE_DIR / 'test').rglob('*.py')) + [PACKAGE_DIR / 'setup.py']


@pytest.mark.parametrize('kind,files,tags', [
    ('runtime', RUNTIME_FILES, ('exec_depend', 'depend')),
    ('test', TEST_FILES, ('exec_depend', 'depend', 'test_depend', 'buildtool_depend')),
])
def test_every_import_is_declared(kind, files, tags):
    imports = _imports(files)
    unmapped = {top: where for top, where in imports.items()
                if top not in ROSDEP_KEYS and top not in NO_ROSDEP_KEY}
    assert not unmapped, f'{kind} imports without a rosdep key mapping here: {unmapped}'
    declared = _depends(*tags)
    undeclared = {ROSDEP_KEYS[top]: where for top, where in imports.items()
                  if top in ROSDEP_KEYS and ROSDEP_KEYS[top] not in declared
                  and not (kind == 'test' and top == 'setuptools')}
    assert not undeclared, f'{kind} imports missing from package.xml {tags}: {undeclared}'


def test_runtime_imports_are_found():
    """The scan sees the imports it must see (it is not vacuous)."""
    imports = _imports(RUNTIME_FILES)
    assert {'rclpy', 'launch', 'launch_ros', 'rosbags', 'mcap', 'numpy'} <= set(imports)


def test_modules_without_a_rosdep_key_are_in_the_docs():
    text = NODE_DOC.read_text(encoding='utf-8')
    section = text.split('### For ROS 2 users', 1)[-1].split('\n### ', 1)[0]
    runtime = set(_imports(RUNTIME_FILES)) | {'dask', 'distributed'}
    missing = [name for module, name in NO_ROSDEP_KEY.items()
               if module in runtime and name not in section]
    assert not missing, f'docs/node.md "For ROS 2 users" does not name (pip) {missing}'
    assert 'pip install' in section


def test_record_dependencies_are_declared():
    """``record:=true`` runs ``ros2 bag record -s mcap``: rosbag2's CLI and MCAP storage."""
    assert {'ros2bag', 'rosbag2_storage_mcap'} <= _depends('exec_depend', 'depend')
