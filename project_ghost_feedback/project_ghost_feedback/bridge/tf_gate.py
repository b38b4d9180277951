# SPDX-License-Identifier: Apache-2.0
"""The rules every /tf and /tf_static transform passes before it reaches tf2 (pure, no ROS).

tf2 keeps, per child frame, the transforms of the last ``tf.cache_s`` before that frame's newest
one and refuses anything older as "old data": one transform stamped far in the future made it
refuse every later valid transform of the frame until the clock reached that stamp, and every
reference needing the frame was dropped. tf2 also interns every frame name it is given, forever.
So the bridge's engine (:mod:`.pairing`, :meth:`~.pairing.PairingEngine.take_transforms`) puts
each transform through :class:`TfGate` first, live and in ``ghost-feedback evaluate`` alike, with
the inputs' time rules and a bound on what tf2 holds:

- ``bad_stamp``: ``nanosec`` >= 10^9 or a negative stamp;
- ``tf_bad_frame``: an empty frame name, one starting with '/', longer than
  :data:`MAX_FRAME_NAME`, or a frame that is its own parent (tf2 refuses them with an error line
  per message);
- ``position_not_finite``, ``quaternion_not_finite``, ``quaternion_zero``,
  ``quaternion_not_unit``: the inputs' pose rules (tf2 refuses NaN with an error line per
  message);
- ``future_stamp``: more than ``time_jump_tolerance_s`` ahead of the clock (the node's clock;
  offline, the newest accepted input stamp), as for the inputs;
- ``tf_too_many_frames``: a frame name beyond ``tf.max_frames`` distinct names (static and
  dynamic, parents and children);
- ``tf_frame_full``: a dynamic transform of a frame that already holds
  ``tf.max_transforms_per_frame`` transforms within ``tf.cache_s`` of its newest.

A dynamic transform stamped more than ``time_jump_tolerance_s`` before the newest of its frame
(a restarted publisher, a replayed bag, a sim reset seen on /tf first) starts a new timeline, as
the inputs' stamp rule does: the caller clears tf2's dynamic transforms (:data:`RESET`) and the
gate forgets its own dynamic state; static transforms stay.
"""

from __future__ import annotations

import collections
from typing import Any

from ..core import NS_PER_S
from ..core.loop import FUTURE_STAMP, future_stamp_detail, went_back
from ..msg_decoding import stamp_to_ns
from .geometry import position_refusal, quaternion_refusal

TF_BAD_STAMP = 'bad_stamp'
TF_BAD_FRAME = 'tf_bad_frame'
TF_FUTURE_STAMP = FUTURE_STAMP
TF_TOO_MANY_FRAMES = 'tf_too_many_frames'
TF_FRAME_FULL = 'tf_frame_full'
TF2_REFUSED = 'tf2_refused'
"""What tf2 itself still refused after the gate (counted by the engine)."""
RESET = 'reset'
""":meth:`TfGate.check`'s answer for a transform that starts a new timeline (then accepted)."""

MAX_FRAME_NAME = 256
"""Longest frame name taken (characters)."""
DEFAULT_MAX_FRAMES = 1000
DEFAULT_MAX_TRANSFORMS_PER_FRAME = 1000
TF2_MAX_GRAPH_DEPTH = 1000
"""tf2's own limit on a chain's length (BufferCore's MAX_GRAPH_DEPTH): a longer chain is
reported by tf2 as a loop."""
_PREFIX_CHARACTERS = frozenset(
    'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./')


def frame_prefix_refusal(prefix: str) -> str | None:
    """Return why ``prefix`` cannot be the bridge's ``frame_prefix`` (None: it can).

    ``''`` (no prefix) or a namespace of letters, digits, ``_ - .`` and ``/`` that ends with
    ``/`` and neither starts with ``/`` nor holds ``//`` (``robot1/``, ``fleet/robot1/``): what a
    tf publisher's frame prefix looks like (robot_state_publisher's ``frame_prefix``).
    """
    if prefix == '':
        return None
    shown = repr(prefix[:60])
    if len(prefix) >= MAX_FRAME_NAME:
        return f'frame_prefix {shown} is longer than {MAX_FRAME_NAME - 1} characters'
    if not set(prefix) <= _PREFIX_CHARACTERS:
        return (f'frame_prefix {shown} holds a character other than letters, digits, '
                "'_', '-', '.' and '/'")
    if prefix.startswith('/') or '//' in prefix or not prefix.endswith('/'):
        return (f"frame_prefix {shown} must end with '/' and neither start with '/' nor hold "
                "'//' (e.g. 'robot1/')")
    return None


def prefixed(prefix: str, frame: str) -> str:
    """Return ``frame`` in the namespace ``prefix`` (kept as it is when empty or prefixed)."""
    if not prefix or not frame or frame.startswith(prefix):
        return frame
    return prefix + frame


class TfGate:
    """Decide, transform by transform, what may go into tf2 (see the module documentation)."""

    def __init__(self, max_frames: int = DEFAULT_MAX_FRAMES,
                 max_transforms_per_frame: int = DEFAULT_MAX_TRANSFORMS_PER_FRAME,
                 cache_ns: int = 10 * NS_PER_S) -> None:
        self.max_frames = int(max_frames)
        self.max_transforms_per_frame = int(max_transforms_per_frame)
        self.cache_ns = int(cache_ns)
        self.frames: set[str] = set()            # every name tf2 was given (tf2 keeps them)
        self.parents: dict[str, str] = {}        # child -> parent of its newest transform
        self._recent: dict[str, collections.deque[int]] = {}   # dynamic stamps within the cache
        self._newest: dict[str, int] = {}        # dynamic child -> newest stamp

    def forget_dynamic(self) -> None:
        """Forget the dynamic transforms' state (tf2's dynamic data was cleared)."""
        self._recent.clear()
        self._newest.clear()

    def check(self, transform: Any, static: bool, now_ns: int | None,
              tolerance_ns: int) -> tuple[str | None, str]:
        """Return what to do with ``transform`` (a geometry_msgs/TransformStamped alike).

        ``(None, '')``: accept it; ``(RESET, detail)``: clear tf2's dynamic transforms, then
        accept it; ``(reason, detail)``: refuse it.
        """
        try:
            stamp = stamp_to_ns(transform.header.stamp, 'transform', 'header.stamp')
        except ValueError as error:
            return TF_BAD_STAMP, str(error)
        if stamp < 0:
            return TF_BAD_STAMP, f'negative stamp {stamp} ns'
        parent, child = transform.header.frame_id, transform.child_frame_id
        for name in (parent, child):
            if not isinstance(name, str) or not name or name.startswith('/') \
                    or len(name) > MAX_FRAME_NAME:
                return TF_BAD_FRAME, (f'frame name {str(name)[:80]!r} (empty, starting with '
                                      f"'/' or longer than {MAX_FRAME_NAME})")
        if parent == child:
            return TF_BAD_FRAME, f'{child!r} is its own parent'
        t, r = transform.transform.translation, transform.transform.rotation
        refused = (position_refusal((t.x, t.y, t.z))
                   or quaternion_refusal((r.x, r.y, r.z, r.w)))
        if refused is not None:
            return refused[0], f'{parent} -> {child}: {refused[1]}'
        future = future_stamp_detail(f'transform {parent} -> {child}', stamp, now_ns,
                                     tolerance_ns)
        if future is not None:
            return TF_FUTURE_STAMP, future
        new_names = {parent, child} - self.frames
        if new_names and len(self.frames) + len(new_names) > self.max_frames:
            return TF_TOO_MANY_FRAMES, (f'{sorted(new_names)[0][:80]!r}: tf already holds '
                                        f'{len(self.frames)} frames (tf.max_frames)')
        verdict: tuple[str | None, str] = (None, '')
        if not static:
            newest = self._newest.get(child)
            if newest is not None and went_back(stamp, newest, tolerance_ns):
                verdict = (RESET, f'transform {parent} -> {child} stamp went back by '
                                  f'{(newest - stamp) / NS_PER_S:.3f} s')
                self.forget_dynamic()
                newest = None
            recent = self._recent.setdefault(child, collections.deque())
            horizon = max(stamp, newest or stamp) - self.cache_ns
            while recent and recent[0] < horizon:
                recent.popleft()
            if len(recent) >= self.max_transforms_per_frame:
                return TF_FRAME_FULL, (f'{child!r} already holds {len(recent)} transforms within '
                                       f'{self.cache_ns / NS_PER_S:g} s '
                                       '(tf.max_transforms_per_frame)')
            recent.append(stamp)
            if newest is None or stamp > newest:
                self._newest[child] = stamp
        self.frames.update(new_names)
        self.parents[child] = parent
        return verdict

    def explain_unreachable(self, target: str, source: str) -> str | None:
        """Return what tf2's "contains a loop" means between two frames, or None.

        tf2 says a tree "contains a loop" also for a chain longer than its limit of
        :data:`TF2_MAX_GRAPH_DEPTH` frames; the gate knows the parents and says which it is.
        """
        for start in (source, target):
            frame, seen, depth = start, {start}, 0
            while frame in self.parents:
                frame = self.parents[frame]
                depth += 1
                if frame in seen:
                    return f'the tf tree contains a loop through {frame!r}'
                seen.add(frame)
            if depth > TF2_MAX_GRAPH_DEPTH:
                return (f'the chain above {start!r} is {depth} frames long, beyond '
                        f"tf2's limit of {TF2_MAX_GRAPH_DEPTH} (no loop)")
        return None
