# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's pairing engine driven directly, as the node drives it, without ROS.

:class:`EngineBridge` builds a :class:`~project_ghost_feedback.bridge.pairing.PairingEngine` from
the bridge's parameter values (the defaults, then the values given; validated by ``config_from``
as the node validates them) and feeds it inputs built by :func:`support.pose_inputs.pose_input`,
with a clock ``now_ns`` the test sets (None: unknown). Everything the engine hands over is kept
in order by :class:`Handed`. Like the node with tf2 importable, ``use_tf`` is on and references
pass the tf filter; the provider given stands for tf2 (by default :class:`NoTransforms`, which
knows no transform: references in the estimate's frame need none).
"""

from project_ghost_feedback.bridge.engine_interface import EngineListener
from project_ghost_feedback.bridge.pairing import PairingEngine
from project_ghost_feedback.bridge.parameters import config_from, PARAMETERS
from project_ghost_feedback.bridge.transforms import TF_UNAVAILABLE, TransformFailure
from support.pose_inputs import COVARIANCE, ODOMETRY, pose_input


class NoTransforms:
    """A transform provider that knows no transform (tf2 before any /tf message)."""

    def lookup(self, target_frame, source_frame, stamp_ns):
        return TransformFailure(TF_UNAVAILABLE, f'{source_frame} -> {target_frame}: no transform')

    def add(self, transform, static):
        return None

    def clear(self):
        pass


class Handed(EngineListener):
    """Everything the engine hands over, by kind, and the order of the outputs (``events``)."""

    def __init__(self):
        self.outcomes, self.raw, self.withheld, self.assessments = [], [], [], []
        self.dropped, self.references_dropped, self.resets = [], [], []
        self.events = []

    def outcome_ready(self, outcome, estimate):
        self.outcomes.append(outcome)
        self.events.append(('outcome', outcome.prediction_stamp_sim_ns))

    def raw_outcome(self, outcome, estimate):
        self.raw.append(outcome)

    def paced_out(self, outcome, estimate):
        self.withheld.append(outcome)
        self.events.append(('paced_out', outcome.prediction_stamp_sim_ns))

    def assessment_ready(self, belief, estimate):
        self.assessments.append(belief)
        self.events.append(('assessment', belief.belief_stamp_sim_ns))

    def estimate_dropped(self, reason, detail):
        self.dropped.append((reason, detail))

    def reference_dropped(self, reason, detail):
        self.references_dropped.append((reason, detail))

    def timeline_reset(self, cause, detail):
        self.resets.append((cause, detail))

    def invalid_assessment(self, error):
        raise AssertionError(f'invalid assessment: {error}')


def parameter_values(**values):
    """Return every bridge parameter's value: the defaults, then ``values``."""
    params = {name: spec.default for name, spec in PARAMETERS.items()}
    params.update(values)
    return params


class EngineBridge:
    """A PairingEngine configured from parameter values, fed inputs, with a settable clock."""

    def __init__(self, transforms=None, estimate_kind=ODOMETRY, reference_kind=ODOMETRY,
                 **values):
        self.values = parameter_values(**values)
        self.handed = Handed()
        self.engine = PairingEngine(
            config_from(self.values), self.handed,
            reference_buffer_size=self.values['reference_buffer_size'],
            pending_capacity=self.values['pending_capacity'],
            transforms=NoTransforms() if transforms is None else transforms)
        self.estimate_kind, self.reference_kind = estimate_kind, reference_kind
        self.now_ns = None
        self.taken = {'estimate': 0, 'reference': 0}

    def reference(self, stamp_ns, frame_id='odom', **pose):
        """Give the engine a reference (``pose``: see :func:`pose_input`)."""
        self.taken['reference'] += 1
        self.engine.take_reference(
            pose_input(stamp_ns, frame_id, kind=self.reference_kind, **pose), self.now_ns)

    def estimate(self, stamp_ns, frame_id='odom', covariance=COVARIANCE, **pose):
        """Give the engine an estimate (std 0.1 on every axis unless ``covariance``)."""
        self.taken['estimate'] += 1
        self.engine.take_estimate(
            pose_input(stamp_ns, frame_id, covariance=covariance, kind=self.estimate_kind,
                       **pose), self.now_ns)

    def set_values(self, **values):
        """Change parameter values as a dynamic parameter change does (validated first)."""
        values = {**self.values, **values}
        config = config_from(values)
        self.values = values
        self.engine.apply_config(config)

    def unaccounted(self):
        """Return the inputs neither used, dropped nor waiting (the node's ``accounting()``).

        All 0 when every input taken is accounted for.
        """
        engine = self.engine
        return {
            'estimate': (self.taken['estimate'] - engine.paired - sum(engine.dropped.values())
                         - len(engine.pending)),
            'reference': (self.taken['reference'] - engine.references_used
                          - sum(engine.references_dropped.values()) - len(engine.tf_waiting)),
        }

    @property
    def outcomes(self):
        return self.handed.outcomes

    @property
    def assessments(self):
        return self.handed.assessments
