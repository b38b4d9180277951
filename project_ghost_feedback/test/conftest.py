# SPDX-License-Identifier: Apache-2.0
"""Register the markers of the ament lint tests (ament's pytest plugins do it on a ROS install).

Also ``rclpy_context``: a private rclpy context per test.
"""

import pytest
import rclpy


def pytest_configure(config):
    """Declare the linter markers, so pytest does not warn about them."""
    for marker in ('copyright', 'flake8', 'linter', 'pep257'):
        config.addinivalue_line('markers', f'{marker}: an ament-style lint test')


@pytest.fixture
def rclpy_context():
    """Return a private, initialised rclpy context, shut down afterwards."""
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        yield context
    finally:
        context.try_shutdown()
