# SPDX-License-Identifier: Apache-2.0
"""CDR bytes -> contracts: the decoder registry ``DECODERS`` (ADR-0026 section 6).

Each decoder deserializes with the public ``Typestore.deserialize_cdr`` of the package's rosbags
typestore (:mod:`.msgdefs`), then builds the contract with the same functions as the live node
(:mod:`project_ghost_feedback.msg_decoding`, which read rclpy and rosbags messages alike and
validate through the core's constructors). All four decoders are registered when this module is
imported; :data:`_LEGACY_DECODERS` decode the earlier definitions still read (a calibrated
assessment recorded before ADR-0026a, with a CalibrationHistory of interface version 2), chosen by
:func:`decoder_for` from the topic's recorded definition (:attr:`.bag_reader.TopicInfo.definition`).
"""

from collections.abc import Callable
from typing import Any

from ..msg_decoding import belief_from_msg, calibrated_from_msg, event_from_msg, outcome_from_msg
from .bag_metadata import normalize_type_name
from .channels import (
    TYPE_BELIEF_SELF_ASSESSMENT,
    TYPE_CALIBRATED_SELF_ASSESSMENT,
    TYPE_FEEDBACK_EVENT,
    TYPE_PREDICTION_OUTCOME,
)
from .msgdefs import typestore


class Decoder:
    """Decoder of one type: CDR bytes -> rosbags message (``deserialize_cdr``) -> contract."""

    def __init__(self, msgtype: str, to_contract: Callable[[Any], object],
                 legacy: bool = False) -> None:
        self.msgtype = msgtype
        self.__doc__ = f'Decode CDR bytes of {msgtype} into its contract.'
        self.to_contract = to_contract
        self.legacy = legacy
        self._deserialize = typestore(legacy).deserialize_cdr

    def decode_message(self, payload: bytes) -> Any:
        """Return the rosbags message of ``payload`` (rosbags' SerdeError if it is not one)."""
        return self._deserialize(payload, self.msgtype)

    def __call__(self, payload: bytes) -> object:
        """Return the contract decoded from ``payload``."""
        return self.to_contract(self._deserialize(payload, self.msgtype))


DECODERS = {
    msgtype: Decoder(msgtype, to_contract) for msgtype, to_contract in (
        (TYPE_CALIBRATED_SELF_ASSESSMENT, calibrated_from_msg),
        (TYPE_BELIEF_SELF_ASSESSMENT, belief_from_msg),
        (TYPE_PREDICTION_OUTCOME, outcome_from_msg),
        (TYPE_FEEDBACK_EVENT, event_from_msg))
}
"""ROS 2 type name (``pkg/msg/Type``) -> decoder ``bytes -> contract`` (ADR-0026 section 6)."""


_LEGACY_DECODERS = {
    TYPE_CALIBRATED_SELF_ASSESSMENT: Decoder(
        TYPE_CALIBRATED_SELF_ASSESSMENT, calibrated_from_msg, legacy=True),
    TYPE_PREDICTION_OUTCOME: Decoder(TYPE_PREDICTION_OUTCOME, outcome_from_msg, legacy=True),
}
"""Decoders of the interface-version-2 definitions (bags recorded before ADR-0026a; outcomes
recorded before the bias evidence)."""


def decoder_for(msgtype: str, definition: str = 'same') -> Decoder:
    """Return the decoder of ``msgtype`` for a topic whose recorded definition is ``definition``.

    ``'legacy'`` (see :func:`.bag_reader._definition`) selects the decoder of the earlier
    definition; anything else the current one. KeyError for a type without decoder.
    """
    msgtype = normalize_type_name(msgtype)
    if definition == 'legacy' and msgtype in _LEGACY_DECODERS:
        return _LEGACY_DECODERS[msgtype]
    return DECODERS[msgtype]


def register_decoder(msgtype: str, decoder: Decoder) -> None:
    """Register ``decoder`` (a :class:`Decoder`: ``bytes -> contract``) for the type ``msgtype``."""
    DECODERS[normalize_type_name(msgtype)] = decoder


def decode(msgtype: str, payload: bytes, definition: str = 'same') -> object:
    """Decode ``payload`` (CDR bytes) of type ``msgtype`` into its contract.

    ``definition`` is the topic's recorded definition (``'legacy'`` for a bag recorded before
    ADR-0026a). KeyError for a type without decoder; rosbags' SerdeError for bytes that are not
    valid CDR of that type; the core's ContractTypeError/ContractValueError for values a contract
    refuses.
    """
    return decoder_for(msgtype, definition)(payload)
