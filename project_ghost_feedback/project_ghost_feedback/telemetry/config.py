# SPDX-License-Identifier: Apache-2.0
"""Replay configuration: what the node's output depends on, as recorded in a bag or overridden.

The node's recorder writes its configuration into metadata.yaml's ``custom_data`` under the
``ghost_feedback.`` keys below; :func:`recorded_config` reads it back.
"""

import dataclasses
import json

from ..core.feedback import (
    DEFAULT_MAX_HISTORY,
    DEFAULT_POLICY,
    make_policy,
    policy_names,
    policy_parameters,
)
from ..core.window import DEFAULT_OUTCOME_BUFFER_SIZE
from .bag_reader import BagError, one_line


# metadata.yaml custom_data keys written by the node's recorder (telemetry.recorder).
CUSTOM_PREFIX = 'ghost_feedback.'
CUSTOM_RECORDER = CUSTOM_PREFIX + 'recorder'
CUSTOM_POLICY = CUSTOM_PREFIX + 'policy'
CUSTOM_POLICY_PARAMETERS = CUSTOM_PREFIX + 'policy_parameters'
CUSTOM_MAX_HISTORY = CUSTOM_PREFIX + 'max_history'
CUSTOM_OUTCOME_BUFFER_SIZE = CUSTOM_PREFIX + 'outcome_buffer_size'
CUSTOM_CONFIG_CHANGES = CUSTOM_PREFIX + 'config_changes'


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """What the node's output depends on: policy, its parameters, window sizes."""

    policy: str = DEFAULT_POLICY
    parameters: tuple = ()
    max_history: int = DEFAULT_MAX_HISTORY
    outcome_buffer_size: int = DEFAULT_OUTCOME_BUFFER_SIZE

    @classmethod
    def make(cls, policy, parameters=None, max_history=DEFAULT_MAX_HISTORY,
             outcome_buffer_size=DEFAULT_OUTCOME_BUFFER_SIZE):
        """Return a validated config (ValueError/TypeError naming the bad value)."""
        make_policy(policy, parameters)  # refuses an unknown policy or parameter, names it
        full = policy_parameters(policy)
        full.update(parameters or {})
        config = cls(policy, tuple(sorted(full.items())), max_history, outcome_buffer_size)
        for name in ('max_history', 'outcome_buffer_size'):
            value = getattr(config, name)
            if type(value) is not int or value < 1:
                raise ValueError(f'{name} must be an int >= 1, got {value!r}')
        if outcome_buffer_size < max_history:
            raise ValueError(
                f'outcome_buffer_size ({outcome_buffer_size}) must be >= max_history '
                f'({max_history})')
        return config

    def make_policy(self):
        """Return the policy object."""
        return make_policy(self.policy, dict(self.parameters))

    def describe(self):
        """Return e.g. ``mahalanobis_downgrade(downgrade_threshold=2, min_outcomes=4)``."""
        parameters = ', '.join(f'{k}={v!r}' for k, v in self.parameters)
        return (f'{self.policy}({parameters}), max_history {self.max_history}, '
                f'outcome_buffer_size {self.outcome_buffer_size}')

    def to_dict(self):
        """Return a JSON-ready dict."""
        return {
            'policy': self.policy, 'parameters': dict(self.parameters),
            'max_history': self.max_history, 'outcome_buffer_size': self.outcome_buffer_size,
        }


def custom_data_for_config(policy_name, parameters, max_history, outcome_buffer_size):
    """Return the metadata.yaml custom_data entries recording a node configuration."""
    return {
        CUSTOM_POLICY: policy_name,
        CUSTOM_POLICY_PARAMETERS: json.dumps(dict(parameters), sort_keys=True),
        CUSTOM_MAX_HISTORY: str(max_history),
        CUSTOM_OUTCOME_BUFFER_SIZE: str(outcome_buffer_size),
    }


def recorded_config(info, first_calibrated=None):
    """Return ``(ReplayConfig, source, warnings)`` for the configuration that recorded the bag.

    ``source`` is ``'recorded'`` when the bag's custom_data holds the node configuration (the
    node's recorder writes it); otherwise the defaults are assumed, with the policy named by the
    first recorded calibrated assessment when it is registered (``'assumed'``).
    """
    custom = info.custom_data
    warnings = []
    if not isinstance(custom, dict):
        raise BagError(f'{info.path}: custom_data is not a mapping')
    if CUSTOM_POLICY in custom:
        try:
            config = ReplayConfig.make(
                custom[CUSTOM_POLICY], json.loads(custom.get(CUSTOM_POLICY_PARAMETERS, '{}')),
                int(custom.get(CUSTOM_MAX_HISTORY, DEFAULT_MAX_HISTORY)),
                int(custom.get(CUSTOM_OUTCOME_BUFFER_SIZE, DEFAULT_OUTCOME_BUFFER_SIZE)))
            changes = int(custom.get(CUSTOM_CONFIG_CHANGES, '0') or 0)
        except (TypeError, ValueError, AttributeError) as error:
            raise BagError(f'{info.path}: recorded configuration in custom_data is unusable: '
                           f'{one_line(error)}') from None
        if changes:
            warnings.append(
                f'the node changed its parameters {changes} time(s) while recording; the '
                'configuration above is the one at the start')
        return config, 'recorded', warnings
    else:
        warnings.append('the bag does not record the node configuration; assuming defaults')
    policy = DEFAULT_POLICY
    if first_calibrated is not None:
        recorded_policy = first_calibrated.adjustment_policy_id
        if recorded_policy in policy_names():
            policy = recorded_policy
        else:
            warnings.append(f'recorded policy {recorded_policy!r} is not registered here')
    return ReplayConfig.make(policy), 'assumed', warnings
