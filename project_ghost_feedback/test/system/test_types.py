# SPDX-License-Identifier: Apache-2.0
"""mypy over mypy.ini: strict on core/, every def annotated elsewhere in the package and bench/."""

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
CORE = ROOT / 'project_ghost_feedback' / 'project_ghost_feedback' / 'core'
BENCH = ROOT / 'bench'

pytestmark = pytest.mark.long   # mypy over a planted copy of the tree: scheduled first


def _mypy(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, '-m', 'mypy', '--no-incremental', *args], cwd=cwd,
        capture_output=True, text=True, timeout=600)


@pytest.fixture(scope='module', autouse=True)
def _needs_mypy():
    if _mypy('--version').returncode != 0:
        pytest.fail('mypy is not installed; run scripts/setup.sh (requirements/jazzy.txt pins it)')


PACKAGE_PLANTS = ('bridge/transforms.py', 'ros/dds.py', 'telemetry/channels.py',
                  'evaluate/command.py', 'audit/discovery.py', 'sim/pose_errors.py',
                  'verification/schema2_history.py', 'demo/connection.py', 'cli.py',
                  'bridge_inputs.py', 'field_inputs.py', 'msg_decoding.py',
                  'navsat_reference.py', 'parameter_spec.py', 'plots.py', 'px4_aid_source.py',
                  'safe_io.py')
"""A module of every package and every top-level module: each gets a def without annotations."""
BENCH_PLANTS = ('harness.py', 'core_bench.py')
UNTYPED = '\n\ndef _untyped(y):\n    return y\n'


@pytest.fixture(scope='module')
def planted(tmp_path_factory):
    """Run mypy once on a copy of the checked tree with every planted error.

    core/feedback/parameter_docs.py: a type error and a def without annotations (strict);
    PACKAGE_PLANTS and bench's BENCH_PLANTS: a def without annotations each. Return
    (exit code, the lines of stdout).
    """
    tree = tmp_path_factory.mktemp('planted') / 'repo'
    package = tree / 'project_ghost_feedback' / 'project_ghost_feedback'
    shutil.copytree(ROOT / 'project_ghost_feedback' / 'project_ghost_feedback', package,
                    ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(ROOT / 'mypy.ini', tree / 'mypy.ini')
    shutil.copytree(BENCH, tree / 'bench', ignore=shutil.ignore_patterns('__pycache__'))
    core_module = package / 'core' / 'feedback' / 'parameter_docs.py'
    core_module.write_text(core_module.read_text()
                           + '\n\ndef _planted(x: int) -> str:\n    return x\n' + UNTYPED)
    for module in [package / name for name in PACKAGE_PLANTS] + [
            tree / 'bench' / name for name in BENCH_PLANTS]:
        module.write_text(module.read_text() + UNTYPED)
    result = _mypy('--config-file', str(tree / 'mypy.ini'), cwd=tree)
    return result.returncode, result.stdout.splitlines()


def _reported(lines, path, code):
    """Return mypy's lines about ``path`` (relative to the tree) with error ``code``."""
    return [line for line in lines if line.startswith(f'{path}:') and f'[{code}]' in line]


def test_mypy_catches_a_planted_error_and_an_untyped_def_in_core(planted):
    """The check is live: a type error and (strict) a missing annotation in core/ both fail."""
    code, lines = planted
    assert code != 0
    core_module = 'project_ghost_feedback/project_ghost_feedback/core/feedback/parameter_docs.py'
    assert len(_reported(lines, core_module, 'return-value')) == 1, lines
    assert len(_reported(lines, core_module, 'no-untyped-def')) == 1, lines


def test_mypy_catches_an_untyped_def_in_each_annotated_package(planted):
    """A def without annotations fails the check in every package and top-level module.

    bridge/, ros/, telemetry/, evaluate/, audit/, sim/, verification/, demo/ and the top-level
    modules (cli, bridge_inputs, field_inputs, msg_decoding, navsat_reference, parameter_spec,
    plots, px4_aid_source, safe_io).
    """
    code, lines = planted
    assert code != 0
    for name in PACKAGE_PLANTS:
        path = f'project_ghost_feedback/project_ghost_feedback/{name}'
        assert len(_reported(lines, path, 'no-untyped-def')) == 1, (name, lines)


def test_mypy_catches_an_untyped_def_in_a_bench(planted):
    """bench/*.py is checked as the package is: a def without annotations fails the check."""
    code, lines = planted
    assert code != 0
    for name in BENCH_PLANTS:
        assert len(_reported(lines, f'bench/{name}', 'no-untyped-def')) == 1, (name, lines)


def test_mypy_passes_on_every_module_of_the_package(planted):
    """Every module of the package and bench/ is checked, and none has an error of its own.

    The planted copy is the tree plus the plants: its errors are exactly the planted ones (one
    per plant, two in core), so the tree as it is has none (one mypy run for both checks).
    """
    _, lines = planted
    errors = [line for line in lines if ': error:' in line]
    assert len(errors) == 2 + len(PACKAGE_PLANTS) + len(BENCH_PLANTS), lines
    modules = len(list(CORE.parent.rglob('*.py'))) + len(list(BENCH.glob('*.py')))
    assert f'(checked {modules} source files)' in lines[-1], lines[-1]
