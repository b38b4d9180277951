# SPDX-License-Identifier: Apache-2.0
"""Lint tests in the spirit of ament's test_flake8, test_pep257 and test_copyright.

ruff enforces the rules in ruff.toml at the repository root (100-character lines, single quotes,
pep257 docstrings, pep8 naming). The license check is plain Python: every .py file starts with
the SPDX line below (after an optional shebang). A version check keeps package.xml, setup.py and
the Python module in sync.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

import project_ghost_feedback

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
REPO_ROOT = PACKAGE_DIR.parent
SPDX_LINE = '# SPDX-License-Identifier: Apache-2.0'
SKIP_DIRS = {'__pycache__', '.pytest_cache', '.hypothesis', '.ruff_cache', 'build', 'install',
             'log', '.venv'}


def _lint_roots():
    """Return the directories and files whose Python sources are linted."""
    roots = [PACKAGE_DIR, REPO_ROOT / 'bench', REPO_ROOT / 'scripts']
    return [root for root in roots if root.exists()]


def _python_files():
    """Return every .py file under the lint roots (sorted, build artefacts excluded)."""
    found = []
    for root in _lint_roots():
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [
                d for d in dirnames if d not in SKIP_DIRS and not d.endswith('.egg-info')]
            found.extend(pathlib.Path(dirpath) / f for f in filenames if f.endswith('.py'))
    return sorted(found)


def _ruff_command():
    """Return the argv prefix that runs ruff, or None when ruff is not installed."""
    exe = shutil.which('ruff')
    if exe:
        return [exe]
    try:
        import ruff  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, '-m', 'ruff']


def test_ruff_flake8_pep257_rules():
    """All Python sources pass ruff with the repository's ruff.toml."""
    command = _ruff_command()
    if command is None:
        pytest.skip('ruff is not installed (it is pinned in requirements/jazzy.txt)')
    config = REPO_ROOT / 'ruff.toml'
    assert config.is_file(), f'missing lint configuration {config}'
    result = subprocess.run(
        command + ['check', '--no-cache', '--config', str(config), '--output-format', 'concise']
        + [str(path) for path in _lint_roots()],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, (
        'ruff found style problems:\n' + result.stdout + result.stderr)


def test_python_files_exist_to_lint():
    """The lint tests really look at files (guards against a wrong path making them vacuous)."""
    files = _python_files()
    assert PACKAGE_DIR / 'setup.py' in files
    assert PACKAGE_DIR / 'project_ghost_feedback' / '__init__.py' in files


def test_spdx_license_header():
    """Every .py file starts with the Apache-2.0 SPDX line (after an optional shebang)."""
    missing = []
    for path in _python_files():
        lines = path.read_text(encoding='utf-8').splitlines()[:2]
        if lines and lines[0].startswith('#!'):
            lines = lines[1:]
        if not lines or lines[0].strip() != SPDX_LINE:
            missing.append(str(path.relative_to(REPO_ROOT)))
    assert not missing, f'files without "{SPDX_LINE}" as first line: {missing}'


def _package_xml_version(package_dir):
    """Return the <version> of package_dir/package.xml."""
    root = ElementTree.parse(package_dir / 'package.xml').getroot()
    return root.findtext('version').strip()


def test_versions_in_sync():
    """package.xml (both packages), setup.py and __version__ all carry the same version."""
    setup_py = (PACKAGE_DIR / 'setup.py').read_text(encoding='utf-8')
    match = re.search(r"version='([^']+)'", setup_py)
    assert match, 'setup.py has no version=... literal'
    versions = {
        'project_ghost_feedback/package.xml': _package_xml_version(PACKAGE_DIR),
        'project_ghost_feedback_msgs/package.xml': _package_xml_version(
            REPO_ROOT / 'project_ghost_feedback_msgs'),
        'setup.py': match.group(1),
        '__version__': project_ghost_feedback.__version__,
    }
    assert len(set(versions.values())) == 1, f'versions differ: {versions}'


@pytest.mark.parametrize('package', ['project_ghost_feedback', 'project_ghost_feedback_msgs'])
def test_package_xml_metadata(package):
    """package.xml is format 3, Apache-2.0, with a maintainer e-mail catkin_pkg accepts."""
    catkin_pkg = pytest.importorskip('catkin_pkg.package')
    parsed = catkin_pkg.parse_package(str(REPO_ROOT / package / 'package.xml'))
    parsed.validate()
    assert parsed.package_format == 3
    assert parsed.name == package
    assert [str(lic) for lic in parsed.licenses] == ['Apache-2.0']


# --- one definition of the time unit (issue 23, requirement 5) --------------------------------

NS_PER_S_HOME = PACKAGE_DIR / 'project_ghost_feedback' / 'core' / 'contracts.py'


def _time_unit_literals(text):
    """Return (line, token) of every number literal worth 10**9 or 2 * 10**9 (code, not text)."""
    import io
    import tokenize

    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type != tokenize.NUMBER:
            continue
        try:
            value = float(token.string.replace('_', ''))
        except ValueError:
            continue
        if value in (1e9, 2e9):
            found.append((token.start[0], token.string))
    return found


def test_the_checker_sees_a_spelled_out_second():
    assert _time_unit_literals('x = t / 1e9\ny = divmod(t, 1_000_000_000)\nz = 2e9\n') == [
        (1, '1e9'), (2, '1_000_000_000'), (3, '2e9')]
    assert _time_unit_literals('"""1e9 in a docstring"""\nx = 1e-9  # 1e9\n') == []


def test_nanoseconds_per_second_is_defined_once_and_used_everywhere():
    """NS_PER_S lives in core/contracts.py; no module of the package or bench/ spells it out."""
    sources = sorted((PACKAGE_DIR / 'project_ghost_feedback').rglob('*.py'))
    sources += sorted((PACKAGE_DIR.parent / 'bench').glob('*.py'))
    offenders, definitions = [], []
    for path in sources:
        text = path.read_text(encoding='utf-8')
        if re.search(r'^\s*NS_PER_S\s*=', text, re.M):
            definitions.append(path)
        if path != NS_PER_S_HOME:
            offenders += [f'{path.name}:{line}: {token}'
                          for line, token in _time_unit_literals(text)]
    assert definitions == [NS_PER_S_HOME]
    assert offenders == [], 'use NS_PER_S from project_ghost_feedback.core'
