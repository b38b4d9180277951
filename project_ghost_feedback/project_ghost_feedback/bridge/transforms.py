# SPDX-License-Identifier: Apache-2.0
"""Transforms between frames for the pairing engine: the provider interface (stdlib types).

The engine (:mod:`.pairing`) asks a *transform provider* for the transform taking coordinates in
a source frame (the reference's) into a target frame (the estimate's) at a stamp. Two drivers
implement it with tf2 (:mod:`.tf2_transforms`): the bridge node with a ``tf2_ros.Buffer`` fed by
the node's /tf and /tf_static subscriptions, and ``ghost-feedback evaluate`` with tf2's
``BufferCore`` fed from a bag's /tf and /tf_static. The rule that uses it is written once, in the
engine; tests may implement it with anything that answers the same way.

A lookup answers a :class:`Transform` (``p_target = R p_source + t``) or a
:class:`TransformFailure` with one of the reasons below, which the bridge counts (references it
could not transform, ``references_dropped[<reason>]``):

- ``tf_unavailable``: a frame is unknown or the two are not connected;
- ``tf_extrapolation_future``: the stamp is after the newest transform data of the chain (the
  data may still come: the reference waits, bounded);
- ``tf_extrapolation_past``: the stamp is before the oldest data kept (it will never come).
"""

from typing import Any, NamedTuple, Protocol

TF_UNAVAILABLE = 'tf_unavailable'
TF_EXTRAPOLATION_FUTURE = 'tf_extrapolation_future'
TF_EXTRAPOLATION_PAST = 'tf_extrapolation_past'
TF_REASONS = (TF_UNAVAILABLE, TF_EXTRAPOLATION_FUTURE, TF_EXTRAPOLATION_PAST)


class Transform(NamedTuple):
    """A rigid transform: ``p_target = R p_source + t``, ``R`` as a unit quaternion (x, y, z, w)."""

    translation_m: tuple[float, float, float]
    rotation_xyzw: tuple[float, float, float, float]


class TransformFailure(NamedTuple):
    """Why a transform could not be had: ``reason`` (one of TF_REASONS), ``detail`` (for a log)."""

    reason: str
    detail: str


class TransformProvider(Protocol):
    """What the engine asks for frames (implemented with tf2 in ``bridge/tf2_transforms.py``)."""

    def lookup(self, target_frame: str, source_frame: str,
               stamp_ns: int) -> Transform | TransformFailure:
        """Return the transform from ``source_frame`` into ``target_frame`` at ``stamp_ns``."""
        ...

    def add(self, transform: Any, static: bool) -> str | None:
        """Take one transform (a TransformStamped alike) that passed the gate; None or why not."""
        ...

    def clear(self) -> None:
        """Forget the dynamic transforms (a timeline reset); static ones stay."""
        ...
