# SPDX-License-Identifier: Apache-2.0
"""Shared test set-up: the test tiers and the fixtures every area uses.

Layout. The test folders mirror the source (:data:`AREAS`): ``core/`` (the pure core and
``verification``), ``sim/``, ``bridge/`` (the pure bridge), ``ros/`` (the nodes, their launch files
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

Workers. ``make test`` runs the suite on two pytest-xdist workers, then the tests marked
``serial`` alone. Each worker gets its own ROS domain (:func:`_worker_domain`): the Makefile
holds one locked domain id per worker (``scripts/env.sh`` twice) and passes them in
``GHOST_FEEDBACK_WORKER_DOMAINS``; worker ``gwN`` takes the N-th, before anything here imports
rclpy, so its nodes, launches, ``ros2`` commands and every subprocess (they inherit
``os.environ``) stay in it. A test module is the unit of work (``--dist loadscope``): its tests
run on one worker, in order, so a module fixture (a demo run, recorded bags, a launch) runs once.
Tests that share something across modules (a file in the clone every test reads, the machine's
load) are marked ``serial``. Tests marked ``long`` are collected first, and the workers take the
modules in the order of their first test (``--no-loadscope-reorder``), so the long ones start
first and the run ends on short ones. (``--dist loadgroup`` and ``xdist_group`` are not used:
with pytest 9.2, pytest-xdist 3.8 cannot attach the group to a test id, and the mark is ignored
without a word: pytest-xdist issue 1386.)
"""

import os
import pathlib

WORKER_DOMAINS = 'GHOST_FEEDBACK_WORKER_DOMAINS'
"""Comma-separated ROS domain ids, one per xdist worker (set by ``make test``)."""


def _worker_domain(environ):
    """Return the ROS_DOMAIN_ID of this xdist worker, or None outside a worker.

    A worker without a domain of its own would share the controller's with the other workers
    (cross-talk between their nodes): that is an error, not a fallback.
    """
    worker = environ.get('PYTEST_XDIST_WORKER')
    if not worker:
        return None
    domains = [d.strip() for d in environ.get(WORKER_DOMAINS, '').split(',') if d.strip()]
    index = int(worker.removeprefix('gw'))
    if index >= len(domains) or len(set(domains)) != len(domains):
        raise RuntimeError(
            f'xdist worker {worker} needs a ROS domain of its own: {WORKER_DOMAINS}='
            f'{environ.get(WORKER_DOMAINS)!r} must list one distinct id per worker '
            '(make test sets it; by hand, source scripts/env.sh once per worker)')
    return domains[index]


_domain = _worker_domain(os.environ)
if _domain is not None:
    os.environ['ROS_DOMAIN_ID'] = _domain

import pytest  # noqa: E402 - after the worker's ROS_DOMAIN_ID, before anything imports rclpy
from support.contracts import build_outcome, build_raw  # noqa: E402
from support.ros_context import new_rclpy_context  # noqa: E402

TEST_ROOT = pathlib.Path(__file__).resolve().parent

AREAS = {
    'core': 'the pure core (core/, verification/)',
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
    config.addinivalue_line(
        'markers', 'serial: run alone after the parallel phase of make test (load-sensitive)')
    config.addinivalue_line(
        'markers', 'long: tens of seconds (or a module fixture that long): collected first')


def pytest_collection_modifyitems(config, items):
    """Mark every test with its file's area; put the tests marked ``long`` first.

    The workers take modules in the order of their first test, so the modules with a long test
    start first and the run ends on short ones: no worker is left with a minute of work while
    the other idles. The order is the same in every worker (xdist checks it); within each part
    it is the files' order.
    """
    for item in items:
        item.add_marker(area_of(str(item.fspath)))
    items.sort(key=lambda item: item.get_closest_marker('long') is None)


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
