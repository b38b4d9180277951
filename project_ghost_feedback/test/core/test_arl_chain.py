# SPDX-License-Identifier: Apache-2.0
"""The exact run-length chain of verification/arl_chain.py, checked against independent ones.

Small windows with loose false-alarm probabilities make the Monte Carlo discriminating: the
chain (iterative solve with a verified residual) must equal a dense ``numpy.linalg.solve`` of the
same system and a first-passage Monte Carlo in which the *policy's own* ``adjust()`` decides every
window, within 4 standard errors. The full-window figure quoted in the docs (3398) is checked too.
"""

from project_ghost_feedback.verification import arl_chain as chain
from project_ghost_feedback.core.feedback import make_policy
import pytest

LOOSE = {'false_alarm_probability': 0.05, 'gross_false_alarm_probability': 0.01}


@pytest.mark.parametrize('window', [6, 8])
@pytest.mark.parametrize('factor', [1.0, 1.3])
def test_iterative_solution_equals_the_dense_solve(window, factor):
    policy = make_policy('calibrated_exceedance', LOOSE)
    result = chain.exceedance_arl(policy, window, factor)
    assert result['residual'] < 1e-12
    dense = chain.dense_exceedance_arl(policy, window, factor)
    assert result['arl'] == pytest.approx(dense, rel=1e-10)


@pytest.mark.parametrize('name', ['calibrated_exceedance', 'overconfidence_scale'])
@pytest.mark.parametrize('window,factor,parameters', [
    (8, 1.0, LOOSE),
    (7, 1.0, {'false_alarm_probability': 0.2, 'gross_false_alarm_probability': 0.1}),
    (8, 1.3, LOOSE),  # beyond-5 outcomes frequent: the warm-up and k_o rule matter
])
def test_chain_agrees_with_a_monte_carlo_of_the_policy(name, window, factor, parameters):
    policy = make_policy(name, parameters)
    exact = chain.exceedance_arl(policy, window, factor)['arl']
    mean, error, runs = chain.first_passage_monte_carlo(
        [policy], 20000, window, factor, seed=window * 100 + int(10 * factor))[policy.policy_id]
    assert runs == 20000
    assert abs(mean - exact) <= 4 * error, (exact, mean, error)
    # Not trivially true: the run length moves with the window and the thresholds.
    other = chain.exceedance_arl(policy, window - 1, factor)['arl']
    assert abs(other - exact) > 8 * error


def test_chain_refuses_a_rule_it_does_not_model():
    # gross_false_alarm_probability below n * p5 makes k_o(n) = 2: the beyond-5 ages would matter.
    policy = make_policy('calibrated_exceedance', {'gross_false_alarm_probability': 1e-6})
    with pytest.raises(NotImplementedError):
        chain.exceedance_arl(policy, 32)


def test_full_window_figure_quoted_in_the_docs():
    exceedance = make_policy('calibrated_exceedance')
    graded = make_policy('overconfidence_scale')
    # The one-step rules coincide for every n <= 32, so the chains (and run lengths) are equal.
    assert all(exceedance.thresholds(n) == graded.thresholds(n)[:2] for n in range(33))
    result = chain.exceedance_arl(exceedance, 32)
    assert result['states'] == 1149017
    assert result['residual'] < 1e-10
    assert round(result['arl']) == 3398
