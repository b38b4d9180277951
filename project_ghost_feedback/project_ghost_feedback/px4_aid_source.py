# SPDX-License-Identifier: Apache-2.0
"""PX4 ``EstimatorAidSource1d/2d/3d`` -> the innovation pairing's input (offline; no ROS import).

PX4's EKF2 publishes one aid-source message per fusion attempt of each aiding source (topics
``estimator_aid_src_<name>``, e.g. ``estimator_aid_src_gnss_pos`` (2d), ``..._baro_hgt`` (1d),
``..._gnss_vel`` (3d), ``..._mag`` (3d)); over uXRCE-DDS they appear as
``/fmu/out/estimator_aid_src_<name>`` where the bridge is configured to send them. The
definitions are kept unmodified in ``third_party/px4_msgs/msg/`` and read by type from their text
(:func:`register_types`, rosbags), so a bag recorded from PX4 is readable without px4_msgs built.

:func:`innovation_of` reads a decoded message by attribute (a rosbags or rclpy message alike):

- the source name is the topic's suffix (``estimator_aid_src_gnss_pos`` -> ``gnss_pos``) plus
  ``_<estimator_instance>`` when the instance is not 0;
- the stamp is ``timestamp_sample`` (microseconds of PX4's boot clock) in nanoseconds;
- ``innovation`` as is, the covariance **diagonal** from ``innovation_variance``: PX4 publishes no
  cross-covariance between the axes of one aid source, so the axes are whitened as if
  uncorrelated (exact when ``H P H^T`` is diagonal, e.g. a position aid whose horizontal
  position errors are uncorrelated; an approximation otherwise, docs/field.md);
- every axis is one block (``KIND_POSITION``: for a one-block source the kind is only the slot
  label, docs/contracts.md "Innovations"), paired two consecutive samples per outcome;
- ``innovation_rejected`` -> ``rejected_by_filter`` (counted, not judged); a sample neither fused
  nor rejected (the source was not being fused) is reported as ``None`` by :func:`innovation_of`
  and counted by the caller as ``not_fused``.

Live (the innovation bridge's ``px4_aid_topics``), a topic's type is read from its name by
:func:`aid_topic_type`: the type whose .msg lists the topic's last name segment in one of its
``# TOPICS`` lines (PX4's own list of the uORB topics of each type, kept in the unmodified
definitions), e.g. ``/fmu/out/estimator_aid_src_gnss_pos`` -> ``px4_msgs/msg/EstimatorAidSource2d``.
"""

from dataclasses import dataclass
import pathlib
from typing import Any

from .core.innovation import KIND_POSITION

PX4_TYPES = ('EstimatorAidSource1d', 'EstimatorAidSource2d', 'EstimatorAidSource3d')
TOPIC_PREFIX = 'estimator_aid_src_'
NS_PER_US = 1000


@dataclass(frozen=True)
class AidSourceInnovation:
    """What :class:`~.core.innovation.InnovationPairing.push` takes, from one aid-source sample."""

    source: str
    stamp_ns: int
    innovation: tuple[float, ...]
    covariance: tuple[float, ...]
    kinds: tuple[int, ...]
    rejected_by_filter: bool


def px4_msg_dir() -> pathlib.Path:
    """Return ``third_party/px4_msgs/msg`` of the source tree."""
    return pathlib.Path(__file__).resolve().parents[2] / 'third_party' / 'px4_msgs' / 'msg'


def px4_msg_texts(directory: pathlib.Path | None = None) -> dict[str, str]:
    """Return ``{'px4_msgs/msg/<Name>': .msg text}`` of the three aid-source types."""
    root = px4_msg_dir() if directory is None else directory
    return {f'px4_msgs/msg/{name}': (root / f'{name}.msg').read_text(encoding='utf-8')
            for name in PX4_TYPES}


def register_types(typestore: Any, directory: pathlib.Path | None = None) -> None:
    """Register the aid-source types in a rosbags Typestore (``get_types_from_msg``)."""
    from rosbags.typesys import get_types_from_msg

    for name, text in px4_msg_texts(directory).items():
        typestore.register(get_types_from_msg(text, name))


def aid_topic_types(directory: pathlib.Path | None = None) -> dict[str, str]:
    """Return ``{uORB topic name: 'px4_msgs/msg/<Name>'}`` from the ``# TOPICS`` lines."""
    types: dict[str, str] = {}
    for typename, text in px4_msg_texts(directory).items():
        for line in text.splitlines():
            words = line.split()
            if words[:2] == ['#', 'TOPICS']:
                types.update((name, typename) for name in words[2:])
    return types


def aid_topic_type(topic: str, directory: pathlib.Path | None = None) -> str:
    """Return the type name (``px4_msgs/msg/<Name>``) of an aid-source topic, from its name.

    The last segment of ``topic`` must be listed in a ``# TOPICS`` line of one of the three
    definitions (:func:`aid_topic_types`); ValueError naming the segment if not (one line).
    """
    tail = topic.rsplit('/', 1)[-1]
    types = aid_topic_types(directory)
    if tail not in types:
        shown = tail if len(tail) <= 64 else f'{tail[:64]}...'
        raise ValueError(
            f'{shown!r} is not a PX4 aid-source topic name (one listed in a "# TOPICS" line of '
            'px4_msgs/msg/EstimatorAidSource1d/2d/3d.msg, e.g. estimator_aid_src_gnss_pos; '
            'docs/field.md lists them)')
    return types[tail]


def source_name(topic: str, estimator_instance: int) -> str:
    """Return the source name of an aid-source topic (``.../estimator_aid_src_gnss_pos``)."""
    tail = topic.rsplit('/', 1)[-1]
    name = tail[len(TOPIC_PREFIX):] if tail.startswith(TOPIC_PREFIX) else tail
    return name if estimator_instance == 0 else f'{name}_{estimator_instance}'


def innovation_of(topic: str, msg: Any) -> AidSourceInnovation | None:
    """Return the innovation of one aid-source message, or None when it was not being fused."""
    rejected = bool(msg.innovation_rejected)
    if not rejected and not bool(msg.fused):
        return None
    values = _floats(msg.innovation)
    variances = _floats(msg.innovation_variance)
    m = len(values)
    covariance = tuple(variances[i] if i == j else 0.0 for i in range(m) for j in range(m))
    return AidSourceInnovation(
        source_name(topic, int(msg.estimator_instance)),
        int(msg.timestamp_sample) * NS_PER_US, values, covariance, (KIND_POSITION,) * m,
        rejected)


def _floats(value: Any) -> tuple[float, ...]:
    if isinstance(value, (int, float)):
        return (float(value),)
    return tuple(float(v) for v in value)
