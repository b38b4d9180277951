# SPDX-License-Identifier: Apache-2.0
"""mypy over the configuration in mypy.ini (issue 23): strict on core/, normal elsewhere listed."""

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORE = ROOT / 'project_ghost_feedback' / 'project_ghost_feedback' / 'core'


def _mypy(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, '-m', 'mypy', '--no-incremental', *args], cwd=cwd,
        capture_output=True, text=True, timeout=600)


@pytest.fixture(scope='module', autouse=True)
def _needs_mypy():
    if _mypy('--version').returncode != 0:
        pytest.fail('mypy is not installed; run scripts/setup.sh (requirements/jazzy.txt pins it)')


def test_mypy_passes_on_the_configured_modules():
    result = _mypy('--config-file', str(ROOT / 'mypy.ini'))
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_catches_a_planted_error_and_an_untyped_def_in_core(tmp_path):
    """The check is live: a type error and (strict) a missing annotation in core/ both fail."""
    tree = tmp_path / 'repo'
    shutil.copytree(ROOT / 'project_ghost_feedback' / 'project_ghost_feedback',
                    tree / 'project_ghost_feedback' / 'project_ghost_feedback',
                    ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(ROOT / 'mypy.ini', tree / 'mypy.ini')
    planted = tree / 'project_ghost_feedback' / 'project_ghost_feedback' / 'core' / 'feedback'
    (planted / 'parameter_docs.py').write_text(
        (planted / 'parameter_docs.py').read_text()
        + '\n\ndef _planted(x: int) -> str:\n    return x\n\n\ndef _untyped(y):\n    return y\n')
    result = _mypy('--config-file', str(tree / 'mypy.ini'), cwd=tree)
    assert result.returncode != 0
    assert 'parameter_docs.py:' in result.stdout
    assert '[return-value]' in result.stdout
    assert '[no-untyped-def]' in result.stdout
