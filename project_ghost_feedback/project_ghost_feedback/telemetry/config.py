# SPDX-License-Identifier: Apache-2.0
"""Replay configuration: what the node's output depends on, as recorded in a bag or overridden.

The node's recorder writes its configuration into metadata.yaml's ``custom_data`` under the
``ghost_feedback.`` keys below; :func:`recorded_config` reads it back.
"""

from __future__ import annotations

import json
from typing import Any, TYPE_CHECKING

from ..core.feedback import (
    DEFAULT_MAX_HISTORY,
    DEFAULT_POLICY,
    PARAMETERS_ADDED,
    policy_names,
)
from ..core.feedback.overconfidence import check_components
from ..core.loop import (
    DEFAULT_TIME_JUMP_TOLERANCE_NS,
    LoopConfig,
    parse_json_text,
    UNVERIFIED_OFF,
)
from ..core.window import DEFAULT_OUTCOME_BUFFER_SIZE
from .bag_metadata import BagError, one_line

if TYPE_CHECKING:
    from ..core.feedback import CalibratedSelfAssessment
    from .bag_reader import BagInfo


# metadata.yaml custom_data keys written by the node's recorder (telemetry.recorder).
CUSTOM_PREFIX = 'ghost_feedback.'
CUSTOM_RECORDER = CUSTOM_PREFIX + 'recorder'
CUSTOM_POLICY = CUSTOM_PREFIX + 'policy'
CUSTOM_POLICY_PARAMETERS = CUSTOM_PREFIX + 'policy_parameters'
CUSTOM_MAX_HISTORY = CUSTOM_PREFIX + 'max_history'
CUSTOM_OUTCOME_BUFFER_SIZE = CUSTOM_PREFIX + 'outcome_buffer_size'
CUSTOM_CONFIG_CHANGES = CUSTOM_PREFIX + 'config_changes'
CUSTOM_TIME_JUMP_TOLERANCE_NS = CUSTOM_PREFIX + 'time_jump_tolerance_ns'
CUSTOM_UNVERIFIED_AFTER_NS = CUSTOM_PREFIX + 'unverified_after_ns'
CUSTOM_UNVERIFIED_MAX_LEVEL = CUSTOM_PREFIX + 'unverified_max_level'
CUSTOM_VEC3_COMPONENTS = CUSTOM_PREFIX + 'vec3_components'


def custom_data_for_config(config: LoopConfig) -> dict[str, str]:
    """Return the metadata.yaml custom_data entries recording a LoopConfig (the start one)."""
    return {
        CUSTOM_POLICY: config.policy,
        CUSTOM_POLICY_PARAMETERS: json.dumps(dict(config.parameters), sort_keys=True),
        CUSTOM_MAX_HISTORY: str(config.max_history),
        CUSTOM_OUTCOME_BUFFER_SIZE: str(config.outcome_buffer_size),
        CUSTOM_TIME_JUMP_TOLERANCE_NS: str(config.time_jump_tolerance_ns),
        CUSTOM_UNVERIFIED_AFTER_NS: str(config.unverified_after_ns),
        CUSTOM_UNVERIFIED_MAX_LEVEL: config.unverified_max_level,
        CUSTOM_VEC3_COMPONENTS: json.dumps(list(config.vec3_components)),
    }


def recorded_components(info: BagInfo) -> tuple[int, int]:
    """Return the vec3 components a bag's recording node was configured with ((3, 3) if unsaid).

    A value that is not two ints in 1..3 is refused (BagError), as :func:`recorded_config` does.
    """
    custom = info.custom_data if isinstance(info.custom_data, dict) else {}
    try:
        return check_components(CUSTOM_VEC3_COMPONENTS, parse_json_text(
            custom.get(CUSTOM_VEC3_COMPONENTS, '[3, 3]'), CUSTOM_VEC3_COMPONENTS))
    except ValueError as error:
        raise BagError(f'{info.path}: {one_line(error)}') from None


def recorded_config(info: BagInfo, first_calibrated: CalibratedSelfAssessment | None = None, *,
                    events_recorded: bool = False) -> tuple[LoopConfig, str, list[str]]:
    """Return ``(LoopConfig, source, warnings)`` for the configuration that recorded the bag.

    ``events_recorded``: the bag has the node's event topic, so parameter changes are applied
    where they happened (no warning about them). ``source`` is ``'recorded'`` when the bag's
    custom_data holds the node configuration (the node's recorder writes it); otherwise the
    defaults are assumed, with the policy named by the first recorded calibrated assessment when
    it is registered (``'assumed'``).
    """
    custom = info.custom_data
    warnings: list[str] = []
    if not isinstance(custom, dict):
        raise BagError(f'{info.path}: custom_data is not a mapping')
    if CUSTOM_POLICY in custom:
        try:
            config = LoopConfig.make(
                custom[CUSTOM_POLICY],
                _with_added(custom[CUSTOM_POLICY],
                            parse_json_text(custom.get(CUSTOM_POLICY_PARAMETERS, '{}'),
                                            CUSTOM_POLICY_PARAMETERS)),
                int(custom.get(CUSTOM_MAX_HISTORY, DEFAULT_MAX_HISTORY)),
                int(custom.get(CUSTOM_OUTCOME_BUFFER_SIZE, DEFAULT_OUTCOME_BUFFER_SIZE)),
                int(custom.get(CUSTOM_TIME_JUMP_TOLERANCE_NS, DEFAULT_TIME_JUMP_TOLERANCE_NS)),
                # A bag recorded before the unverified rule: the values of its old outputs.
                int(custom.get(CUSTOM_UNVERIFIED_AFTER_NS,
                               UNVERIFIED_OFF['unverified_after_ns'])),
                str(custom.get(CUSTOM_UNVERIFIED_MAX_LEVEL,
                               UNVERIFIED_OFF['unverified_max_level'])),
                # A bag recorded before vec3_components: every vec3 had 3.
                recorded_components(info))
            changes = int(custom.get(CUSTOM_CONFIG_CHANGES, '0') or 0)
        except (TypeError, ValueError, AttributeError) as error:
            raise BagError(f'{info.path}: recorded configuration in custom_data is unusable: '
                           f'{one_line(error)}') from None
        if changes and not events_recorded:
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
    return LoopConfig.make(policy), 'assumed', warnings


def _with_added(policy: object, parameters: Any) -> Any:
    """Return recorded ``parameters``, those added since (PARAMETERS_ADDED) at their old value.

    A recorded set that is not a mapping is returned as is (LoopConfig.make refuses it).
    """
    if not isinstance(parameters, dict) or not isinstance(policy, str):
        return parameters
    return {**PARAMETERS_ADDED.get(policy, {}), **parameters}
