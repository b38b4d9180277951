# SPDX-License-Identifier: Apache-2.0
"""What a message received as bytes must pass before the node records it (pure Python: rosbags).

The node records ``/diagnostics`` and the ``record_topics`` as the CDR bytes its subscriptions
took, nothing decoded. rclpy accepts bytes that rosbags (and so ``info``, ``replay``,
``evaluate``, ``audit`` and every rosbags user) cannot decode, or decodes differently: a string
without its terminating null, with an embedded null (rclpy reads up to it, rosbags past it),
invalid UTF-8, a length past the payload. :class:`PayloadCheck` holds the same rules as the
node's inputs: each payload is decoded by rosbags with the very definition the bag's schema
carries (:func:`~.msgdefs.full_definition`), and every string in it must be free of nulls.
What fails is not recorded; the caller counts it by the reason returned:

- ``too_large``: over the readers' message limit (``BagLimits.message_bytes``, 1 MiB): the
  readers would refuse the whole bag for it;
- ``malformed``: rosbags refuses it (CDR encapsulation, a string's terminator or length, UTF-8,
  a sequence past the payload, trailing bytes);
- ``string_with_null``: a string holds a null byte (rclpy and rosbags would read other strings).
"""

from __future__ import annotations

from collections.abc import Iterable
import dataclasses
from typing import Any

from .bag_limits import DEFAULT_LIMITS
from .msgdefs import full_definition

TOO_LARGE = 'too_large'
MALFORMED = 'malformed'
STRING_WITH_NULL = 'string_with_null'
REASONS = (TOO_LARGE, MALFORMED, STRING_WITH_NULL)


def _has_null(value: Any) -> bool:
    """Return True when a string anywhere in a rosbags message object holds a null byte."""
    if isinstance(value, str):
        return '\x00' in value
    if isinstance(value, (list, tuple)):
        return any(_has_null(item) for item in value)
    if dataclasses.is_dataclass(value):
        return any(_has_null(getattr(value, field.name)) for field in dataclasses.fields(value))
    return False  # numbers and numpy arrays of numbers


class PayloadCheck:
    """Decide whether CDR bytes of given ROS 2 types may be recorded (module documentation).

    ``msgtypes``: the types to check, ``pkg/msg/Type``. ValueError (one line) when a type's
    definition cannot be had or parsed: such a type cannot be checked, so it is not recorded.
    """

    def __init__(self, msgtypes: Iterable[str],
                 message_bytes: int = DEFAULT_LIMITS.message_bytes) -> None:
        from rosbags.typesys import get_types_from_msg, get_typestore, Stores

        self.message_bytes = int(message_bytes)
        self._store = get_typestore(Stores.EMPTY)
        for msgtype in sorted(set(msgtypes)):
            try:
                types = get_types_from_msg(full_definition(msgtype), msgtype)
                self._store.register(types)
            except Exception as error:  # noqa: BLE001 - rosbags raises its own error types
                raise ValueError(f'cannot check {msgtype} before recording it: '
                                 f'{type(error).__name__}: {error}') from None

    def refusal(self, msgtype: str, payload: bytes | memoryview) -> str | None:
        """Return why ``payload`` (CDR of ``msgtype``) must not be recorded, or None."""
        if len(payload) > self.message_bytes:
            return TOO_LARGE
        try:
            message = self._store.deserialize_cdr(payload, msgtype)
        except Exception:  # noqa: BLE001 - rosbags raises SerdeError and others
            return MALFORMED
        return STRING_WITH_NULL if _has_null(message) else None
