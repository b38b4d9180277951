# SPDX-License-Identifier: Apache-2.0
"""``colcon test`` of the built workspace runs the package's lint tests, as on a ROS machine.

Runs the real colcon (the project venv's colcon-core, colcon-ros and colcon-test-result) on the
package that ``make setup`` colcon-built into build/ and install/, selecting the linter tests
(``--pytest-args -m linter``), with the log and the test results in a temporary folder, then
reads the results back with ``colcon test-result``.
"""

import os
import pathlib
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
LINT_TESTS = {'test_copyright', 'test_flake8', 'test_pep257'}


@pytest.mark.long
@pytest.mark.skipif(shutil.which('colcon') is None, reason='colcon is not on PATH')
@pytest.mark.skipif(not (ROOT / 'build' / 'project_ghost_feedback').is_dir(),
                    reason='the workspace is not colcon-built (run make setup)')
def test_colcon_test_runs_the_lint_tests(tmp_path):
    """The three lint tests pass under `colcon test -m linter`; `colcon test-result` agrees."""
    env = dict(os.environ, COLCON_HOME=str(tmp_path / 'colcon_home'))
    results = tmp_path / 'results'
    run = subprocess.run(
        ['colcon', '--log-base', str(tmp_path / 'log'), 'test',
         '--base-paths', str(ROOT / 'project_ghost_feedback'),
         '--build-base', str(ROOT / 'build'), '--install-base', str(ROOT / 'install'),
         '--test-result-base', str(results), '--pytest-args', '-m', 'linter'],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    reports = list(results.rglob('pytest.xml'))
    assert len(reports) == 1, (reports, run.stdout)
    cases = ElementTree.parse(reports[0]).getroot().iter('testcase')
    names = {case.get('classname', '').split('.')[-1] for case in cases}
    assert names == LINT_TESTS, names
    summary = subprocess.run(
        ['colcon', 'test-result', '--test-result-base', str(results), '--all'],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert summary.returncode == 0, summary.stdout + summary.stderr
    assert 'Summary: 3 tests, 0 errors, 0 failures, 0 skipped' in summary.stdout, summary.stdout
