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
Plain helpers, for harness classes, module fixtures and module-level builders (test modules
import them: ``from conftest import new_rclpy_context``): ``new_rclpy_context`` (the fixture's
context, shut down by the caller), ``build_outcome`` / ``build_raw`` (the factories),
``zero_error_outcomes`` (outcomes from distance pairs), ``named_level_msg`` (a NamedLevel
message) and ``publish_clock_until`` (/clock until a node's clock reads it).
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


def new_rclpy_context(args=None):
    """Return a new private rclpy Context, initialised (with ``args`` when given).

    The caller shuts it down (``context.try_shutdown()``). Tests take the ``rclpy_context``
    fixture instead; harness classes, module fixtures and command-line ``args`` use this.
    In the fast tier ``rclpy.init`` skips the test (``_fast_tier_guard``).
    """
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context, args=args)
    return context


@pytest.fixture
def rclpy_context():
    """Return a private, initialised rclpy Context; shut down after the test."""
    context = new_rclpy_context()
    try:
        yield context
    finally:
        context.try_shutdown()


def build_outcome(observed_ns, distance=1.0, orientation=None):
    """Return a valid PredictionOutcome observed at ``observed_ns``, predicted 10 ms before.

    Fixed, non-zero error vectors; ``distance`` is the position Mahalanobis distance, and the
    orientation one too unless ``orientation`` is given.
    """
    from project_ghost_feedback.core import PredictionOutcome

    return PredictionOutcome(
        max(observed_ns - 10_000_000, 0), observed_ns, (0.1, -0.2, 0.05), (0.0, 0.01, 0.0),
        distance, distance if orientation is None else orientation)


def build_raw(stamp_ns, level=None):
    """Return a BeliefSelfAssessment at ``stamp_ns`` of ``level`` (KNOWN by default).

    One axis level (``position_x``) and one block level (``pose``), both ``level`` too.
    """
    from project_ghost_feedback.core import BeliefSelfAssessment, NamedLevel, SelfAssessmentLevel

    level = SelfAssessmentLevel.KNOWN if level is None else level
    return BeliefSelfAssessment(stamp_ns, level, (NamedLevel('position_x', level),),
                                (NamedLevel('pose', level),))


def zero_error_outcomes(distance_pairs, observed_lag_ns=0):
    """Return PredictionOutcomes with zero error vectors, one per ``(position, orientation)``.

    Outcome ``i`` is predicted at ``i`` ns and observed at ``i + observed_lag_ns`` ns.
    """
    from project_ghost_feedback.core import PredictionOutcome

    return [PredictionOutcome(i, i + observed_lag_ns, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), p, o)
            for i, (p, o) in enumerate(distance_pairs)]


def publish_clock_until(spin_until, publisher, node, stamp_ns):
    """Publish /clock = ``stamp_ns`` (again every 50 ms) until ``node``'s clock reads it.

    ``spin_until(condition, what)`` is the caller's progress wait (with its ceiling).
    """
    import time

    from rosgraph_msgs.msg import Clock

    from project_ghost_feedback.core import NS_PER_S

    msg = Clock()
    msg.clock.sec, msg.clock.nanosec = divmod(stamp_ns, NS_PER_S)
    last = [0.0]

    def reads():
        if node.get_clock().now().nanoseconds == stamp_ns:
            return True
        if time.monotonic() - last[0] > 0.05:
            publisher.publish(msg)
            last[0] = time.monotonic()
        return False

    spin_until(reads, f'the node clock to read {stamp_ns} ns')


def named_level_msg(name, level):
    """Return a project_ghost_feedback_msgs/NamedLevel message of ``name`` at wire ``level``."""
    from project_ghost_feedback_msgs.msg import NamedLevel, SelfAssessmentLevel

    return NamedLevel(name=name, level=SelfAssessmentLevel(value=level))


@pytest.fixture
def outcome():
    """Return the factory :func:`build_outcome` ``(observed_ns, distance, orientation)``."""
    return build_outcome


@pytest.fixture
def raw():
    """Return the factory :func:`build_raw` ``(stamp_ns, level=KNOWN)`` of BeliefSelfAssessments."""
    return build_raw
