# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's engine against bad inputs, future stamps and timeline resets, no ROS.

The inputs and order of test/ros/test_outcome_bridge_faults.py, given to the engine directly
(support/bridge_engine.py) with the clock the node would pass: the refusals by reason, the
future-stamp rule, a restarted estimator and a simulator reset seen first on the clock or first
on the inputs. The node's own parts (its clock and /clock, callback errors, the wire) stay there.
"""

import pytest

from support.bad_estimates import BAD_ESTIMATES, EXPECTED_REASON
from support.bridge_engine import EngineBridge
from support.pose_inputs import pose_input, SECOND_NS, UNPACED

TENTH = SECOND_NS // 10
NOW_NS = 1_700_000_000 * SECOND_NS
"""A node clock in 2023 (the system clock the DDS tests' node reads)."""


def _pairs(b, first_s, count, period_ns=TENTH):
    """Give ``count`` reference + estimate pairs from ``first_s`` (same stamp each)."""
    start = first_s * SECOND_NS
    for index in range(count):
        stamp = start + index * period_ns
        b.reference(stamp)
        b.estimate(stamp, x=0.1)


def test_bad_estimates_are_refused_with_a_reason_and_give_nothing():
    """Every bad quaternion / covariance class: counted by its reason, no outcome, no claim."""
    b = EngineBridge(**{**UNPACED, 'max_reference_gap_s': 200.0})
    b.reference(0)
    b.reference(100 * SECOND_NS)
    for index, (name, fields) in enumerate(BAD_ESTIMATES.items()):
        before = b.engine.dropped.copy()
        b.estimate((index + 1) * SECOND_NS, **fields)
        reason = EXPECTED_REASON[name]
        assert b.engine.dropped - before == {reason: 1}, (name, dict(b.engine.dropped))
        assert b.handed.dropped[-1][0] == reason
    assert sum(b.engine.dropped.values()) == len(BAD_ESTIMATES)
    assert not b.outcomes and not b.assessments and b.engine.paired == 0
    assert b.engine.last_estimate_ns is None   # none of them became the newest estimate
    # A bad reference is refused too, and a valid estimate still pairs.
    b.reference(50 * SECOND_NS, quaternion=(0.0, 0.0, 0.0, 0.0))
    assert b.engine.references_dropped == {'quaternion_zero': 1}
    b.estimate(60 * SECOND_NS)
    (outcome,) = b.outcomes
    assert outcome.prediction_stamp_sim_ns == 60 * SECOND_NS
    assert b.unaccounted() == {'estimate': 0, 'reference': 0}


@pytest.mark.parametrize(('sec', 'nanosec', 'reason'), [
    (0, SECOND_NS, 'bad_stamp'), (-1, 0, 'bad_stamp')])
def test_a_bad_stamp_is_refused(sec, nanosec, reason):
    b = EngineBridge(**UNPACED)
    b.engine.take_estimate(pose_input(0, sec=sec, nanosec=nanosec, covariance=[0.01] * 36))
    b.engine.take_reference(pose_input(0, sec=sec, nanosec=nanosec))
    assert b.engine.dropped == {reason: 1} and b.engine.references_dropped == {reason: 1}


def test_a_future_estimate_stamp_is_refused_and_never_becomes_newest():
    """An estimate stamped 2^31-10 s by a clock in 2023: future_stamp; the next pairs all pair."""
    b = EngineBridge(**UNPACED)
    b.now_ns = NOW_NS
    now_s = NOW_NS // SECOND_NS
    b.reference((now_s - 10) * SECOND_NS)
    b.estimate((2**31 - 10) * SECOND_NS)
    assert b.engine.dropped == {'future_stamp': 1} and b.engine.last_estimate_ns is None
    assert 's ahead' in b.handed.dropped[0][1]
    _pairs(b, now_s - 9, 20)
    assert b.engine.paired == 20 and len(b.outcomes) == 20
    assert b.engine.dropped == {'future_stamp': 1}
    # Within time_jump_tolerance_s (5 s) ahead of the clock: taken.
    b.reference(NOW_NS + 4 * SECOND_NS)
    b.estimate(NOW_NS + 4 * SECOND_NS)
    assert b.engine.paired == 21


def test_without_a_clock_no_stamp_is_in_the_future():
    """The clock unknown (None, as offline): the far stamp is taken (the rule needs a clock)."""
    b = EngineBridge(**UNPACED)
    b.reference((2**31 - 10) * SECOND_NS)
    b.estimate((2**31 - 10) * SECOND_NS)
    assert b.engine.dropped == {} and b.engine.paired == 1


def test_an_estimator_restart_resets_and_pairing_resumes():
    """Stamps go back by 4,900 s (a restarted estimator): one reset, every pair after it pairs."""
    b = EngineBridge(**UNPACED)
    b.now_ns = NOW_NS
    _pairs(b, 5000, 5)
    assert b.engine.paired == 5
    _pairs(b, 100, 10)
    assert b.engine.resets == {'reference_stamp_jump': 1}
    assert [cause for cause, _ in b.handed.resets] == ['reference_stamp_jump']
    assert b.engine.paired == 15 and b.engine.dropped == {}
    assert b.unaccounted() == {'estimate': 0, 'reference': 0}


def test_an_estimate_stamp_going_back_alone_resets_too():
    """Only the estimates restart (the references stay): estimate_stamp_jump, then they pair."""
    b = EngineBridge(**UNPACED)
    for index in range(101):
        b.reference(index * TENTH)
    b.estimate(9 * SECOND_NS)
    b.estimate(SECOND_NS)
    assert b.engine.resets == {'estimate_stamp_jump': 1} and b.engine.paired == 2
    b.estimate(SECOND_NS - 1)   # back by less than the tolerance: not newer, refused
    assert b.engine.dropped == {'estimate_not_newer': 1} and b.engine.paired == 2


@pytest.mark.parametrize('order', ['clock_first', 'inputs_first'])
def test_a_sim_reset_resumes_pairing_whatever_the_order(order):
    """The clock goes back from 1000 s to 1 s; inputs restart at 1 s; a pre-reset estimate is late.

    Whichever of the clock and the inputs shows the reset first, pairing resumes within one
    reference period after it, and the late estimate (stamped before the reset, delivered after
    it) never blocks the new timeline: clock first, it is a future stamp; inputs first, it waits
    until the clock's reset drops it.
    """
    b = EngineBridge(**UNPACED)
    b.now_ns = 1000 * SECOND_NS
    _pairs(b, 990, 5)
    before = b.engine.paired
    assert before == 5

    def clock_goes_back():
        b.engine.clock_jumped(SECOND_NS - b.now_ns, SECOND_NS)
        b.now_ns = SECOND_NS

    if order == 'clock_first':
        clock_goes_back()
    b.reference(1 * SECOND_NS)
    b.estimate(995 * SECOND_NS)   # stamped before the reset
    if order == 'inputs_first':
        clock_goes_back()
    b.reference(SECOND_NS + SECOND_NS // 10)
    b.estimate(SECOND_NS + SECOND_NS // 20)
    assert b.engine.paired == before + 1   # at once: a reference after it is there
    b.reference(SECOND_NS + 2 * SECOND_NS // 10)   # one reference period later
    _pairs(b, 2, 10)
    assert b.engine.paired == before + 11
    if order == 'clock_first':
        assert b.engine.resets == {'clock_jump': 1}
        assert b.engine.dropped == {'future_stamp': 1}
    else:
        assert b.engine.resets == {'reference_stamp_jump': 1, 'clock_jump': 1}
        assert b.engine.dropped == {'time_reset': 1}
    assert b.engine.dropped['estimate_not_newer'] == 0
    assert b.unaccounted() == {'estimate': 0, 'reference': 0}
