# SPDX-License-Identifier: Apache-2.0
"""Shared test set-up: the test tiers, an rclpy context fixture and contract factories.

Tiers. Every test file belongs to one area that mirrors the source (``core``, ``bridge``,
``telemetry``, ``ros``, ``system``: :data:`AREAS`), given to its tests as a pytest marker, so
``pytest -m core`` runs the pure core's tests. ``make test-fast`` (``GHOST_FEEDBACK_FAST=1``) runs
every test that needs neither DDS nor a subprocess: a test that initialises rclpy or starts a
process is skipped at that call, with the reason, so the fast tier can never silently include
one. ``make test`` runs everything (CI).

Fixtures: ``rclpy_context`` (a private, initialised ``rclpy.Context``, shut down afterwards) and
the contract factories ``outcome`` and ``raw`` (valid contracts from a stamp and a distance).
"""

import os
import pathlib

import pytest

AREAS = {
    'core': ('test_core_', 'test_policies', 'test_graded_policy', 'test_arl_chain', 'test_sim',
             'test_node_level_log', 'test_vec3', 'test_overconfidence'),
    'bridge': ('test_bridge_', 'test_outcome_bridge', 'test_fuzz_bridge', 'test_evaluate'),
    'telemetry': ('test_telemetry', 'test_replay', 'test_bag_', 'test_audit', 'test_conversions',
                  'test_interfaces'),
    'ros': ('test_feedback_node', 'test_fuzz_node', 'test_node_', 'test_faults',
            'test_launch_static'),
    'system': ('test_ros2_cli', 'test_demo', 'test_stack_demo', 'test_containment',
               'test_env_script', 'test_colcon_test', 'test_lint', 'test_flake8', 'test_pep257',
               'test_copyright', 'test_package_deps', 'test_public_apis', 'test_docs'),
}
"""Area marker -> test file name prefixes (the longest matching prefix wins)."""

FAST = os.environ.get('GHOST_FEEDBACK_FAST') == '1'


def area_of(filename):
    """Return the area of a test file name, or 'system' when no prefix matches."""
    best = ('system', '')
    for area, prefixes in AREAS.items():
        for prefix in prefixes:
            if filename.startswith(prefix) and len(prefix) > len(best[1]):
                best = (area, prefix)
    return best[0]


def pytest_configure(config):
    """Declare the linter markers (ament's plugins do it on a ROS install) and the areas."""
    for marker in ('copyright', 'flake8', 'linter', 'pep257'):
        config.addinivalue_line('markers', f'{marker}: an ament-style lint test')
    for area in AREAS:
        config.addinivalue_line('markers', f'{area}: tests of the {area} area (conftest.AREAS)')


def pytest_collection_modifyitems(config, items):
    """Mark every test with its file's area."""
    for item in items:
        item.add_marker(area_of(pathlib.Path(str(item.fspath)).name))


def _fast_tier_refuses(what):
    def refuse(*args, **kwargs):
        pytest.skip(f'needs {what}: runs in the full tier (make test), not in make test-fast')
    return refuse


@pytest.fixture(autouse=FAST)
def _fast_tier_guard(monkeypatch):
    """In the fast tier, skip a test at the moment it initialises rclpy or starts a process."""
    import subprocess

    import rclpy

    monkeypatch.setattr(rclpy, 'init', _fast_tier_refuses('DDS (rclpy.init)'))
    monkeypatch.setattr(subprocess, 'Popen', _fast_tier_refuses('a subprocess'))


@pytest.fixture
def rclpy_context():
    """Return a private, initialised rclpy Context; shut down after the test."""
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        yield context
    finally:
        context.try_shutdown()


@pytest.fixture
def outcome():
    """Return a factory ``outcome(observed_ns, distance=1.0, orientation=None)``."""
    from project_ghost_feedback.core import PredictionOutcome

    def make(observed_ns, distance=1.0, orientation=None):
        return PredictionOutcome(
            max(observed_ns - 10_000_000, 0), observed_ns, (0.1, -0.2, 0.05), (0.0, 0.01, 0.0),
            distance, distance if orientation is None else orientation)

    return make


@pytest.fixture
def raw():
    """Return a factory ``raw(stamp_ns, level=KNOWN)`` of BeliefSelfAssessments."""
    from project_ghost_feedback.core import BeliefSelfAssessment, NamedLevel, SelfAssessmentLevel

    def make(stamp_ns, level=SelfAssessmentLevel.KNOWN):
        return BeliefSelfAssessment(stamp_ns, level, (NamedLevel('position_x', level),),
                                    (NamedLevel('pose', level),))

    return make
