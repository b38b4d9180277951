# SPDX-License-Identifier: Apache-2.0
"""ament_pep257 over this package, as ROS packages ship it (``colcon test`` runs it).

The pep257 convention, as in ruff.toml; docstrings are checked for form, not presence (D100-D107
ignored, like ament's default). D300, D402 and D403 are left to ruff (test_lint.py), whose versions
of them know single-quoted code and CamelCase names; pydocstyle 6.3 reports false positives there.
"""

import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
IGNORE = ['D100', 'D101', 'D102', 'D103', 'D104', 'D105', 'D106', 'D107', 'D300', 'D402', 'D403']


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    main = pytest.importorskip(
        'ament_pep257.main', reason='ament_pep257 (with pydocstyle) is not installed').main
    rc = main(argv=['--convention', 'pep257', '--add-ignore', *IGNORE, '--', str(PACKAGE_DIR)])
    assert rc == 0, 'Found code style errors / warnings'
