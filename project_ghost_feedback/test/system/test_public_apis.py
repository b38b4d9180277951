# SPDX-License-Identifier: Apache-2.0
"""The package uses only public names of rosbags, mcap and rclpy (a minor release may break others).

Public means: imported from a module whose dotted path has no component starting with ``_``, the
name itself not starting with ``_``, and, for rosbags, only from the modules it documents as its
API, and only names they list in ``__all__``. Attribute access on anything is checked against
internals the telemetry code used to reach into (the reader's storages and their scan, the
generated per-type CDR functions), and against rclpy's C bindings: an entity's ``handle`` and the
``take_message`` an executor calls on it (the bridge once drained a queue that way).
"""

import ast
import importlib
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'project_ghost_feedback'
BENCH = pathlib.Path(__file__).resolve().parents[3] / 'bench'
LIBRARIES = ('rosbags', 'mcap', 'rclpy')
ROSBAGS_API_MODULES = {
    'rosbags.highlevel', 'rosbags.interfaces', 'rosbags.rosbag2', 'rosbags.serde',
    'rosbags.typesys',
}
MCAP_API_MODULES = {
    'mcap.reader', 'mcap.writer', 'mcap.records', 'mcap.exceptions', 'mcap.stream_reader',
    'mcap.well_known', 'mcap.summary', 'mcap.decoder',
}
INTERNAL_ATTRIBUTES = {
    'storages', 'messages_scan', 'deserialize_cdr_le', 'deserialize_cdr_be',
    'serialize_cdr_le', 'serialize_cdr_be', 'getsize_cdr', 'get_msgdef', 'fielddefs',
    'handle', 'take_message',
}


def _sources():
    files = sorted(PACKAGE.rglob('*.py')) + sorted(BENCH.glob('*.py'))
    assert len(files) > 20
    return files


def _library_imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split('.')[0] in LIBRARIES:
                yield node.lineno, node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split('.')[0] in LIBRARIES:
                    yield node.lineno, alias.name, []


def _problems(path):
    tree = ast.parse(path.read_text(encoding='utf-8'), str(path))
    problems = []
    for lineno, module, names in _library_imports(tree):
        where = f'{path.name}:{lineno}'
        if any(part.startswith('_') for part in module.split('.')):
            problems.append(f'{where}: private module {module}')
        if module.startswith('rosbags') and module != 'rosbags' and (
                module not in ROSBAGS_API_MODULES):
            problems.append(f'{where}: {module} is not a documented rosbags API module')
        if module.startswith('mcap.') and module not in MCAP_API_MODULES:
            problems.append(f'{where}: {module} is not a public mcap module')
        try:
            exported = getattr(importlib.import_module(module), '__all__', None)
        except ImportError:
            exported = None
        for name in names:
            if name.startswith('_'):
                problems.append(f'{where}: private name {module}.{name}')
            elif module.startswith('rosbags') and exported is not None and name not in exported:
                problems.append(f'{where}: {module}.{name} is not in its __all__')
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in INTERNAL_ATTRIBUTES:
            problems.append(f'{path.name}:{node.lineno}: internal attribute .{node.attr}')
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ('getattr', 'setattr') and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in INTERNAL_ATTRIBUTES):
            problems.append(f'{path.name}:{node.lineno}: internal attribute via {node.func.id}')
    return problems


@pytest.mark.parametrize('path', _sources(), ids=lambda p: p.name)
def test_only_public_rosbags_and_mcap_names(path):
    """No private module, name or internal attribute of rosbags/mcap/rclpy in package or benches."""
    assert _problems(path) == []


def test_the_check_finds_what_it_forbids(tmp_path):
    """The scan itself flags each kind of private use (so the test above can fail)."""
    sample = tmp_path / 'sample.py'
    sample.write_text(
        'from rosbags.rosbag2.storage_mcap import McapReader\n'
        'from rosbags.rosbag2.metadata import dump_qos_v9\n'
        'from mcap._chunk_indexer import x\n'
        'from rosbags.rosbag2 import _private\n'
        'def f(reader):\n'
        '    return reader.storage.storages[0].messages_scan([])\n'
        "getattr(object, 'messages_scan', None)\n"
        'from rclpy.impl import _x\n'
        'from rclpy._rclpy_pybind11 import Subscription\n'
        'def g(subscription):\n'
        '    return subscription.handle.take_message(subscription.msg_type, False)\n',
        encoding='utf-8')
    found = '\n'.join(_problems(sample))
    for needle in ('storage_mcap is not a documented rosbags',
                   'metadata is not a documented rosbags',
                   'private module mcap._chunk_indexer', 'private name rosbags.rosbag2._private',
                   'internal attribute .storages', 'internal attribute .messages_scan',
                   'internal attribute via getattr', 'private name rclpy.impl._x',
                   'private module rclpy._rclpy_pybind11', 'internal attribute .handle',
                   'internal attribute .take_message'):
        assert needle in found, (needle, found)
