# SPDX-License-Identifier: Apache-2.0
"""The core is pure: no ROS, MCAP or rosbags import anywhere under ``core/``.

(a) A fresh interpreter with those modules made unimportable imports the core and runs
``assess_with_feedback``; (b) a static scan of every ``.py`` under ``core/`` allows only standard
library and package-relative imports that stay inside ``core/``.
"""

import ast
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[2]
CORE_DIR = PACKAGE_ROOT / 'project_ghost_feedback' / 'core'

BLOCKED_EXACT = ('rclpy', 'rosbags', 'project_ghost_feedback_msgs')
BLOCKED_PREFIXES = ('rosidl', 'mcap')

# Runs in a fresh interpreter: blocks the ROS-side modules, imports the core, exercises it, and
# prints a JSON report on stdout.
_CHILD = textwrap.dedent("""
    import importlib.abc
    import json
    import sys

    BLOCKED_EXACT = {blocked_exact!r}
    BLOCKED_PREFIXES = {blocked_prefixes!r}
    attempts = []


    def blocked(fullname):
        top = fullname.partition('.')[0]
        return top in BLOCKED_EXACT or top.startswith(BLOCKED_PREFIXES)


    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if blocked(fullname):
                attempts.append(fullname)
                raise ImportError(f'{{fullname}} is blocked by test_core_purity')
            return None


    sys.meta_path.insert(0, Blocker())
    for name in list(sys.modules):
        if blocked(name):
            del sys.modules[name]

    probe_blocked = []
    for probe in ('rclpy', 'rosidl_runtime_py', 'mcap_ros2', 'rosbags',
                  'project_ghost_feedback_msgs'):
        try:
            __import__(probe)
        except ImportError:
            probe_blocked.append(probe)
    attempts.clear()

    import project_ghost_feedback.core as core
    import project_ghost_feedback.core.feedback as feedback
    import pkgutil
    core_modules = sorted(
        m.name for m in pkgutil.walk_packages(core.__path__, 'project_ghost_feedback.core.'))
    for name in core_modules:
        __import__(name)

    raw = core.BeliefSelfAssessment(42, core.SelfAssessmentLevel.KNOWN)
    outcomes = [
        core.PredictionOutcome(i, i + 1, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), d, 0.0)
        for i, d in enumerate([0.5, 4.0, 9.0, float('inf')])
    ]
    calibrated = feedback.assess_with_feedback(
        raw, outcomes, feedback.MahalanobisDowngradePolicy())
    print(json.dumps({{
        'probe_blocked': probe_blocked,
        'attempts': attempts,
        'loaded_blocked': sorted(name for name in sys.modules if blocked(name)),
        'core_modules': core_modules,
        'repr': repr(calibrated),
    }}))
""").format(blocked_exact=BLOCKED_EXACT, blocked_prefixes=BLOCKED_PREFIXES)


@pytest.fixture(scope='module')
def child_report():
    """Run the blocking child interpreter once and return its JSON report."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        p for p in (str(PACKAGE_ROOT), env.get('PYTHONPATH', '')) if p)
    result = subprocess.run(
        [sys.executable, '-c', _CHILD], env=env, capture_output=True, text=True, timeout=120,
        check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_blocker_really_blocks_ros_modules(child_report):
    """In the child, importing rclpy, rosidl*, mcap*, rosbags and the msgs package fails."""
    assert child_report['probe_blocked'] == [
        'rclpy', 'rosidl_runtime_py', 'mcap_ros2', 'rosbags', 'project_ghost_feedback_msgs']


def test_core_imports_and_runs_without_ros(child_report):
    """The core and core.feedback import, and assess_with_feedback runs, with ROS unavailable."""
    assert 'project_ghost_feedback.core.feedback' in child_report['core_modules']
    assert 'project_ghost_feedback.core.contracts' in child_report['core_modules']
    assert 'adjusted_overall_level=<SelfAssessmentLevel.UNCERTAIN: 1>' in child_report['repr']
    assert "adjustment_reason='downgrade_from_calibration'" in child_report['repr']


def test_core_never_tries_a_ros_import(child_report):
    """No module of core/ even attempts to import a blocked module, and none is loaded."""
    assert child_report['attempts'] == []
    assert child_report['loaded_blocked'] == []


def test_child_result_equals_in_process_result(child_report):
    """The blocked child computes the byte-identical repr this process computes."""
    from project_ghost_feedback.core import (
        BeliefSelfAssessment,
        PredictionOutcome,
        SelfAssessmentLevel,
    )
    from project_ghost_feedback.core.feedback import (
        assess_with_feedback,
        MahalanobisDowngradePolicy,
    )
    raw = BeliefSelfAssessment(42, SelfAssessmentLevel.KNOWN)
    outcomes = [PredictionOutcome(i, i + 1, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), d, 0.0)
                for i, d in enumerate([0.5, 4.0, 9.0, float('inf')])]
    expected = assess_with_feedback(raw, outcomes, MahalanobisDowngradePolicy())
    assert child_report['repr'] == repr(expected)


# --- (b) static scan ---------------------------------------------------------------------------


def _import_violations(source, depth):
    """Return the non-stdlib or core-escaping imports of ``source``.

    ``depth`` is how many packages below ``core`` the module's package is (0 for ``core/x.py``).
    Also flags ``importlib.import_module('x')`` and ``__import__('x')`` with a literal name.
    """
    violations = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition('.')[0] not in sys.stdlib_module_names:
                    violations.append(f'import {alias.name}')
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if (node.module or '').partition('.')[0] not in sys.stdlib_module_names:
                    violations.append(f'from {node.module} import ...')
            elif node.level - 1 > depth:
                violations.append(f'from {"." * node.level}{node.module or ""} import ... '
                                  '(escapes core/)')
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', None)
            first = node.args[0]
            if (name in ('import_module', '__import__') and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)
                    and first.value.partition('.')[0] not in sys.stdlib_module_names):
                violations.append(f'{name}({first.value!r})')
    return violations


def _core_files():
    return sorted(CORE_DIR.rglob('*.py'))


def test_scan_covers_the_core_files():
    """The scan sees every expected core module (so an empty glob cannot pass vacuously)."""
    names = {path.relative_to(CORE_DIR).as_posix() for path in _core_files()}
    assert {'__init__.py', 'validation.py', 'contracts.py', 'feedback/__init__.py',
            'feedback/types.py', 'feedback/protocols.py', 'feedback/reference_policy.py',
            'feedback/orchestration.py', 'feedback/registry.py'} <= names


def test_scanner_flags_forbidden_imports():
    """The scanner itself catches ROS, MCAP, third-party and core-escaping imports."""
    source = textwrap.dedent("""
        import os
        import rclpy
        from rosidl_runtime_py import message_to_ordereddict
        from mcap.reader import make_reader
        import numpy as np
        from ..ros import conversions
        from . import types
        import importlib
        importlib.import_module('rosbags.rosbag2')
    """)
    assert _import_violations(source, depth=0) == [
        'import rclpy',
        'from rosidl_runtime_py import ...',
        'from mcap.reader import ...',
        'import numpy',
        'from ..ros import ... (escapes core/)',
        "import_module('rosbags.rosbag2')",
    ]
    assert _import_violations('from ..contracts import X\n', depth=1) == []


@pytest.mark.parametrize('path', _core_files(), ids=lambda p: p.relative_to(CORE_DIR).as_posix())
def test_core_file_imports_only_stdlib_and_core(path):
    """Every .py under core/ imports only the standard library and core/ itself."""
    depth = len(path.relative_to(CORE_DIR).parts) - 1
    assert _import_violations(path.read_text(encoding='utf-8'), depth) == []
