# SPDX-License-Identifier: Apache-2.0
"""The license header of every Python file of this package (ament_copyright's role).

ament_copyright is not on PyPI, and it expects a copyright notice with the full license text;
this project marks files with an SPDX identifier instead, so this test checks that line (after an
optional shebang) in every .py file of the package, in the source tree and in ``colcon test``.
"""

import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
SPDX_LINE = '# SPDX-License-Identifier: Apache-2.0'
SKIP_DIRS = {'__pycache__', '.pytest_cache', '.hypothesis', 'build', 'install', 'log'}


@pytest.mark.copyright
@pytest.mark.linter
def test_copyright():
    files = [path for path in sorted(PACKAGE_DIR.rglob('*.py'))
             if not SKIP_DIRS.intersection(path.relative_to(PACKAGE_DIR).parts)]
    assert files
    missing = []
    for path in files:
        lines = path.read_text(encoding='utf-8').splitlines()[:2]
        if lines and lines[0].startswith('#!'):
            lines = lines[1:]
        if not lines or lines[0] != SPDX_LINE:
            missing.append(str(path.relative_to(PACKAGE_DIR)))
    assert not missing, f'no {SPDX_LINE!r} header: {missing}'
