# SPDX-License-Identifier: Apache-2.0
"""What an innovation source's outcomes hold: the feedback node's vec3 components, per layout.

A one-block source of m components fills both outcome slots with m-component distances; a
two-block source fills each slot with its block. The engine learns it from the source's layout
and says it on /diagnostics (``vec3_components[<source>]``); evaluate names a mismatch with the
components k was read with.
"""

import json

from project_ghost_feedback.bridge.innovation_engine import InnovationEngine
from project_ghost_feedback.cli import main
from project_ghost_feedback.core.innovation import (
    KIND_ORIENTATION as ORI, KIND_POSITION as POS, vec3_components_of)
import pytest
from support.innovation_bags import filter_stream, INNOVATION_TOPIC, write_innovation_bag


@pytest.mark.parametrize('kinds, components', [
    ((POS, POS, POS), (3, 3)), ((POS, POS), (2, 2)), ((POS,), (1, 1)),
    ((ORI, ORI, ORI), (3, 3)), ((POS, POS, POS, ORI, ORI, ORI), (3, 3)),
    ((POS, POS, ORI), (2, 1)), ((POS, ORI), (1, 1))])
def test_the_components_follow_the_layout(kinds, components):
    assert vec3_components_of(kinds) == components


def test_the_engine_learns_each_sources_components_and_reports_them():
    engine = InnovationEngine()
    assert engine.components == {}
    engine.take('gnss', 1_000, [0.1, -0.2], [1.0, 0.0, 0.0, 1.0], [POS, POS])
    engine.take('lidar', 1_000, [0.1] * 6, [1.0 if i == j else 0.0
                                            for i in range(6) for j in range(6)],
                [POS, POS, POS, ORI, ORI, ORI])
    assert engine.components == {'gnss': (2, 2), 'lidar': (3, 3)}
    values = engine.values()
    assert values['vec3_components[gnss]'] == '2,2'
    assert values['vec3_components[lidar]'] == '3,3'
    engine.take('bad', 1_000, [0.1], [-1.0], [POS])  # refused: no layout learnt
    assert 'bad' not in engine.components


def _evaluate(bag, out, *extra):
    status = main(['evaluate', str(bag), '--innovation', INNOVATION_TOPIC, '--output-dir',
                   str(out), '--no-plot', *extra])
    assert status == 0
    summary = json.loads((out / 'summary.json').read_text(encoding='utf-8'))
    return summary, (out / 'summary.txt').read_text(encoding='utf-8')


def test_evaluate_names_a_planar_source_read_with_three_components(tmp_path):
    """A planar source with its noise 3x its claim: k read as chi(3) is biased low (2.6)."""
    bag = write_innovation_bag(tmp_path / 'planar', filter_stream(
        4, 30, m=2, fault_at_s=0, noise_factor=3.0))
    summary, text = _evaluate(bag, tmp_path / 'default')
    assert summary['innovation']['vec3_components'] == {'gnss': [2, 2]}
    assert summary['vec3_components'] == [3, 3]
    assert '--vec3-components 2 2' in text
    fixed, text = _evaluate(bag, tmp_path / 'fixed', '--vec3-components', '2', '2')
    assert fixed['vec3_components'] == [2, 2]
    assert '--vec3-components' not in text
    assert fixed['calibrated_levels'] == summary['calibrated_levels']  # levels: the same
    k_default = summary['overconfidence_over_run']['position']['k_hat']
    k_fixed = fixed['overconfidence_over_run']['position']['k_hat']
    assert 2.7 < k_fixed < 3.3 and k_default < 2.75, (k_default, k_fixed)
