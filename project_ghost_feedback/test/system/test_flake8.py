# SPDX-License-Identifier: Apache-2.0
"""ament_flake8 over this package, as ROS packages ship it (``colcon test`` runs it).

The project's style has 100-character lines (ruff.toml); ament_flake8's own config (99) is
otherwise kept. ``make lint`` checks the same rules with ruff (test_lint.py).
"""

import pathlib

import pytest

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    main = pytest.importorskip(
        'ament_flake8.main', reason='ament_flake8 (with flake8) is not installed').main_with_errors
    rc, errors = main(argv=['--linelength', '100', str(PACKAGE_DIR)])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)
