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


def _mypy(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, '-m', 'mypy', '--no-incremental', *args], cwd=cwd,
        capture_output=True, text=True, timeout=600)


@pytest.fixture(scope='module', autouse=True)
def _needs_mypy():
    if _mypy('--version').returncode != 0:
        pytest.fail('mypy is not installed; run scripts/setup.sh (requirements/jazzy.txt pins it)')


def test_mypy_passes_on_every_module_of_the_package():
    result = _mypy('--config-file', str(ROOT / 'mypy.ini'))
    assert result.returncode == 0, result.stdout + result.stderr
    modules = len(list(CORE.parent.rglob('*.py'))) + len(list(BENCH.glob('*.py')))
    assert f'no issues found in {modules} source files' in result.stdout, result.stdout


def test_mypy_catches_a_planted_error_and_an_untyped_def_in_core(tmp_path):
    """The check is live: a type error and (strict) a missing annotation in core/ both fail."""
    tree = tmp_path / 'repo'
    shutil.copytree(ROOT / 'project_ghost_feedback' / 'project_ghost_feedback',
                    tree / 'project_ghost_feedback' / 'project_ghost_feedback',
                    ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(ROOT / 'mypy.ini', tree / 'mypy.ini')
    shutil.copytree(BENCH, tree / 'bench', ignore=shutil.ignore_patterns('__pycache__'))
    planted = tree / 'project_ghost_feedback' / 'project_ghost_feedback' / 'core' / 'feedback'
    (planted / 'parameter_docs.py').write_text(
        (planted / 'parameter_docs.py').read_text()
        + '\n\ndef _planted(x: int) -> str:\n    return x\n\n\ndef _untyped(y):\n    return y\n')
    result = _mypy('--config-file', str(tree / 'mypy.ini'), cwd=tree)
    assert result.returncode != 0
    assert 'parameter_docs.py:' in result.stdout
    assert '[return-value]' in result.stdout
    assert '[no-untyped-def]' in result.stdout


def test_mypy_catches_an_untyped_def_in_each_annotated_package(tmp_path):
    """A def without annotations fails the check in every package and top-level module.

    bridge/, ros/, telemetry/, evaluate/, audit/, sim/, verification/, demo/ and the top-level
    modules (cli, bridge_inputs, field_inputs, msg_decoding, navsat_reference, parameter_spec,
    plots, px4_aid_source, safe_io).
    """
    tree = tmp_path / 'repo'
    package = tree / 'project_ghost_feedback' / 'project_ghost_feedback'
    shutil.copytree(ROOT / 'project_ghost_feedback' / 'project_ghost_feedback', package,
                    ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(ROOT / 'mypy.ini', tree / 'mypy.ini')
    shutil.copytree(BENCH, tree / 'bench', ignore=shutil.ignore_patterns('__pycache__'))
    planted = ('bridge/transforms.py', 'ros/dds.py', 'telemetry/channels.py',
               'evaluate/command.py', 'audit/discovery.py', 'sim/pose_errors.py',
               'verification/schema2_history.py', 'demo/connection.py', 'cli.py',
               'bridge_inputs.py', 'field_inputs.py', 'msg_decoding.py', 'navsat_reference.py',
               'parameter_spec.py', 'plots.py', 'px4_aid_source.py', 'safe_io.py')
    for name in planted:
        module = package / name
        module.write_text(module.read_text() + '\n\ndef _untyped(y):\n    return y\n')
    result = _mypy('--config-file', str(tree / 'mypy.ini'), cwd=tree)
    assert result.returncode != 0
    for name in planted:
        assert f'project_ghost_feedback/{name}:' in result.stdout, (name, result.stdout)
    assert result.stdout.count('[no-untyped-def]') == len(planted), result.stdout


def test_mypy_catches_an_untyped_def_in_a_bench(tmp_path):
    """bench/*.py is checked as the package is: a def without annotations fails the check."""
    tree = tmp_path / 'repo'
    shutil.copytree(ROOT / 'project_ghost_feedback' / 'project_ghost_feedback',
                    tree / 'project_ghost_feedback' / 'project_ghost_feedback',
                    ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(ROOT / 'mypy.ini', tree / 'mypy.ini')
    shutil.copytree(BENCH, tree / 'bench', ignore=shutil.ignore_patterns('__pycache__'))
    for name in ('harness.py', 'core_bench.py'):
        module = tree / 'bench' / name
        module.write_text(module.read_text() + '\n\ndef _untyped(y):\n    return y\n')
    result = _mypy('--config-file', str(tree / 'mypy.ini'), cwd=tree)
    assert result.returncode != 0
    for name in ('harness.py', 'core_bench.py'):
        assert f'bench/{name}:' in result.stdout, (name, result.stdout)
    assert result.stdout.count('[no-untyped-def]') == 2, result.stdout
