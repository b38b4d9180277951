# SPDX-License-Identifier: Apache-2.0
"""Shared test set-up: the test tiers and the fixtures every area uses.

Layout. The test folders mirror the source (:data:`AREAS`): ``core/`` (the pure core and
``analysis``), ``sim/``, ``bridge/`` (the pure bridge), ``ros/`` (the nodes, their launch files
and interfaces), ``telemetry/`` (bags, replay, Foxglove), ``tools/`` (evaluate, audit, the
demos), ``system/`` (lint, types, packaging, docs, DDS containment, the real ros2 tools). A
test's area is its folder, given to its tests as a pytest marker, so ``pytest -m core`` runs the
pure core's tests. Shared harnesses and builders live in ``support/``; test modules import them
(``from support.contracts import build_outcome``) and never import each other.

Tiers. ``make test-fast`` (``GHOST_FEEDBACK_FAST=1``) runs every test that needs neither DDS
nor a subprocess: a test that initialises rclpy or starts a process is skipped at that call,
with the reason, so the fast tier can never silently include one. ``make test`` runs everything
(CI).

Fixtures: ``rclpy_context`` (a private, initialised ``rclpy.Context``, shut down afterwards,
from :func:`support.ros_context.new_rclpy_context`) and the contract factories ``outcome`` and
``raw`` (:func:`support.contracts.build_outcome` / ``build_raw``).
"""

import os
import pathlib

import pytest
from support.contracts import build_outcome, build_raw
from support.ros_context import new_rclpy_context

TEST_ROOT = pathlib.Path(__file__).resolve().parent

AREAS = {
    'core': 'the pure core (core/, analysis/)',
    'sim': 'the simulators (sim/)',
    'bridge': 'the pure bridge (bridge/)',
    'ros': 'the nodes, launch files, interfaces and message conversions (ros/, msgs)',
    'telemetry': 'bags, replay and the Foxglove layout (telemetry/)',
    'tools': 'the offline tools and the demos (evaluate/, audit/, demo/)',
    'system': 'project-wide checks: lint, types, packaging, docs, DDS containment, ros2 tools',
}
"""Area marker (= test folder) -> what its tests cover."""

FAST = os.environ.get('GHOST_FEEDBACK_FAST') == '1'


def area_of(path):
    """Return the area of a test file: its folder under the test root (ValueError elsewhere)."""
    relative = pathlib.Path(path).resolve().relative_to(TEST_ROOT)
    if len(relative.parts) != 2 or relative.parts[0] not in AREAS:
        raise ValueError(f'{path}: a test file belongs in one of the folders {", ".join(AREAS)}')
    return relative.parts[0]


def pytest_configure(config):
    """Declare the linter markers (ament's plugins do it on a ROS install) and the areas."""
    for marker in ('copyright', 'flake8', 'linter', 'pep257'):
        config.addinivalue_line('markers', f'{marker}: an ament-style lint test')
    for area in AREAS:
        config.addinivalue_line('markers', f'{area}: tests of {AREAS[area]}')


def pytest_collection_modifyitems(config, items):
    """Mark every test with its file's area."""
    for item in items:
        item.add_marker(area_of(str(item.fspath)))


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
    context = new_rclpy_context()
    try:
        yield context
    finally:
        context.try_shutdown()


@pytest.fixture
def outcome():
    """Return the factory :func:`build_outcome` ``(observed_ns, distance, orientation)``."""
    return build_outcome


@pytest.fixture
def raw():
    """Return the factory :func:`build_raw` ``(stamp_ns, level=KNOWN)`` of BeliefSelfAssessments."""
    return build_raw
