# SPDX-License-Identifier: Apache-2.0
"""Message definitions for telemetry, without rclpy: .msg texts, a rosbags typestore, schemas.

The .msg files of ``project_ghost_feedback_msgs`` are found through the ament index (an installed
workspace, as rosbag2 finds them) or, failing that, in the source tree next to this package. From
them this module builds:

- a rosbags :class:`~rosbags.typesys.store.Typestore` whose public ``serialize_cdr`` and
  ``deserialize_cdr`` encode and decode CDR (nothing here packs bytes by hand);
- the MCAP schema text exactly as rosbag2 builds it (``full_definition``): the .msg text verbatim,
  then for each dependency, depth-first, in sorted order and each type once, a newline, a line
  of 80 ``=``, a line ``MSG: pkg/Type`` and its .msg text;
- the RIHS01 type hash (``type_hash``), computed by rosbags (equal to rosidl's).
"""

import functools
import os
import pathlib
import re
from typing import Any

from .channels import CHANNEL_BY_TYPE, MSGS_PACKAGE

DELIMITER = '=' * 80 + '\n'

# rosbag2 (LocalMessageDefinitionSource) finds the dependencies of a .msg with this expression:
# the first token of a line, optionally followed by an array suffix, then whitespace.
_FIELD_TYPE = re.compile(r'(?:^|\n)\s*([a-zA-Z0-9_/]+)(?:\[[^\]]*\])?\s+')
_PRIMITIVE_TYPES = frozenset((
    'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16', 'int32',
    'uint32', 'int64', 'uint64', 'string'))


LEGACY_MSG_TEXTS = {
    f'{MSGS_PACKAGE}/msg/CalibrationHistory': (
        '# Aggregated evidence from the most recent PredictionOutcome messages '
        '(ADR-0026 section 1).\n'
        '#\n'
        '# Each outcome falls in exactly one bucket, by the worse (larger) of its two UNSQUARED\n'
        '# Mahalanobis distances d:\n'
        '#   d <= 1 -> within_1_std; 1 < d <= 3 -> beyond_1_std; 3 < d <= 5 -> beyond_3_std;\n'
        '#   d > 5 (or +inf) -> beyond_5_std.\n'
        '# Invariant: the four counts add up to outcomes_considered.\n'
        '\n'
        'uint32 SCHEMA_VERSION=2\n'
        '\n'
        'uint32 outcomes_considered\n'
        'uint32 count_within_1_std\n'
        'uint32 count_beyond_1_std\n'
        'uint32 count_beyond_3_std\n'
        'uint32 count_beyond_5_std\n'
        '# Largest unsquared Mahalanobis distances in the window '
        '(>= 0, +inf legal; 0.0 when empty).\n'
        'float64 worst_position_mahalanobis\n'
        'float64 worst_orientation_mahalanobis\n'
        "# False iff outcomes_considered == 0 (the contract's None); then the stamp below is 0.\n"
        'bool has_most_recent_observed_stamp\n'
        '# Observed stamp of the most recent outcome in the window, nanoseconds, >= 0.\n'
        'int64 most_recent_observed_stamp_sim_ns\n'
        '# Must equal SCHEMA_VERSION.\n'
        'uint32 schema_version\n'),
    f'{MSGS_PACKAGE}/msg/PredictionOutcome': (
        '# A prediction held against what was later observed.\n'
        '#\n'
        '# Mahalanobis distances are UNSQUARED: d = sqrt(e^T'
        ' S^-1 e), with e the 3-vector error and S the\n'
        '# predicted 3x3 covariance of that vec3. d >= 0; +inf is legal (e.g. a singular or zero\n'
        '# covariance that was still contradicted); NaN is rejected.\n'
        '\n'
        'uint32 SCHEMA_VERSION=2\n'
        '\n'
        '# header.stamp: time of the observation the prediction'
        ' was compared with (>= prediction_stamp).\n'
        '# header.frame_id: the frame position_error_m'
        ' and orientation_error_rad are expressed in\n'
        '# (may be empty, <= 256 characters).\n'
        'std_msgs/Header header\n'
        '# Time the prediction was made for / from (>= 0).\n'
        'builtin_interfaces/Time prediction_stamp\n'
        '# Observed minus predicted position, metres (finite), in header.frame_id.\n'
        'float64[3] position_error_m\n'
        '# Observed minus predicted orientation (rotation'
        ' vector), radians (finite), in header.frame_id.\n'
        'float64[3] orientation_error_rad\n'
        '# Unsquared Mahalanobis distance of position_error_m (dimensionless, >= 0, +inf legal).\n'
        'float64 position_mahalanobis\n'
        '# Unsquared Mahalanobis distance of orientation_error_rad'
        ' (dimensionless, >= 0, +inf legal).\n'
        'float64 orientation_mahalanobis\n'
        '# Must equal SCHEMA_VERSION.\n'
        'uint32 schema_version\n'),
}
"""Earlier .msg texts still read from bags: CalibrationHistory interface version 2 (ADR-0026a),
PredictionOutcome interface version 2 (before the bias evidence).

Verbatim, comments included: the MCAP schema text and the RIHS01 hash of a bag recorded before
ADR-0026a are those of this text (and, for CalibratedSelfAssessment, of the current texts of its
other dependencies, which did not change).
"""

LEGACY_TYPES = frozenset((
    f'{MSGS_PACKAGE}/msg/CalibrationHistory', f'{MSGS_PACKAGE}/msg/CalibratedSelfAssessment',
    f'{MSGS_PACKAGE}/msg/PredictionOutcome'))
"""Types whose interface-version-2 definition (:data:`LEGACY_MSG_TEXTS`) is still decoded."""


class MessageDefinitionError(RuntimeError):
    """The .msg files of project_ghost_feedback_msgs cannot be found or parsed."""


def _source_msg_dir() -> pathlib.Path:
    """Return ``<repository>/project_ghost_feedback_msgs/msg`` relative to this file."""
    return pathlib.Path(__file__).resolve().parents[3] / MSGS_PACKAGE / 'msg'


def _ament_msg_dir() -> pathlib.Path | None:
    """Return the installed ``share/<pkg>/msg`` directory from the ament index, or None."""
    try:
        from ament_index_python.packages import (
            get_package_share_directory,
            PackageNotFoundError,
        )
    except ImportError:
        return None
    try:
        return pathlib.Path(get_package_share_directory(MSGS_PACKAGE)) / 'msg'
    except (PackageNotFoundError, LookupError, ValueError, OSError):
        return None


def msg_dir() -> pathlib.Path:
    """Return the directory holding the package's .msg files (ament index first, then source).

    ``GHOST_FEEDBACK_MSG_DIR`` overrides both. Raise MessageDefinitionError when none exists.
    """
    candidates: list[pathlib.Path] = []
    override = os.environ.get('GHOST_FEEDBACK_MSG_DIR')
    if override:
        candidates.append(pathlib.Path(override))
    else:
        installed = _ament_msg_dir()
        if installed is not None:
            candidates.append(installed)
        candidates.append(_source_msg_dir())
    for candidate in candidates:
        if candidate.is_dir() and any(candidate.glob('*.msg')):
            return candidate
    raise MessageDefinitionError(
        f'cannot find the .msg files of {MSGS_PACKAGE} (looked in '
        f'{", ".join(str(c) for c in candidates)}); build the workspace or set '
        'GHOST_FEEDBACK_MSG_DIR')


@functools.lru_cache(maxsize=None)
def msg_texts() -> dict[str, str]:
    """Return ``{'pkg/msg/Type': .msg text}`` for every .msg of project_ghost_feedback_msgs."""
    directory = msg_dir()
    return {
        f'{MSGS_PACKAGE}/msg/{path.stem}': path.read_text(encoding='utf-8')
        for path in sorted(directory.glob('*.msg'))
    }


def _texts(legacy: bool) -> dict[str, str]:
    """Return the current .msg texts, with the legacy ones substituted when ``legacy``."""
    texts = msg_texts()
    return {**texts, **LEGACY_MSG_TEXTS} if legacy else texts


@functools.lru_cache(maxsize=None)
def typestore(legacy: bool = False) -> Any:
    """Return a rosbags Typestore holding the package's message types (built once).

    ``legacy=True``: the store of the interface-version-2 definitions (:data:`LEGACY_MSG_TEXTS`),
    which decodes bags recorded before ADR-0026a.
    """
    from rosbags.typesys import get_types_from_msg, get_typestore, Stores

    # The Jazzy store brings the dependencies (std_msgs/Header, builtin_interfaces/Time).
    store = get_typestore(Stores.ROS2_JAZZY)
    types: dict[str, Any] = {}
    try:
        for name, text in _texts(legacy).items():
            types.update(get_types_from_msg(text, name))
        store.register(types)
    except Exception as error:  # noqa: BLE001 - any parse failure means unusable definitions
        raise MessageDefinitionError(
            f'cannot parse the .msg files of {MSGS_PACKAGE}: {error}') from error
    return store


def _split_type_name(name: str) -> tuple[str, str]:
    """Return ``(package, type)`` for ``pkg/Type`` or ``pkg/msg/Type``."""
    parts = name.split('/')
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(parts) == 3 and parts[1] == 'msg':
        return parts[0], parts[2]
    raise MessageDefinitionError(f'not a message type name: {name!r}')


def _dependencies(text: str, package: str) -> list[str]:
    """Return the sorted dependency names of a .msg text, as rosbag2 derives them."""
    found: set[str] = set()
    for match in _FIELD_TYPE.finditer(text):
        field_type = match.group(1)
        if field_type in _PRIMITIVE_TYPES:
            continue
        found.add(field_type if '/' in field_type else f'{package}/{field_type}')
    return sorted(found)


@functools.lru_cache(maxsize=None)
def _dependency_text(package: str, type_name: str) -> str:
    """Return the .msg text of another package's type (std_msgs/Header, builtin_interfaces/Time).

    The installed .msg file, found through the ament index, as rosbag2 does. Without a ROS
    environment, rosbags' Jazzy definition of the type (the same fields, without the comments).
    """
    try:
        from ament_index_python.packages import get_package_share_directory
        path = pathlib.Path(get_package_share_directory(package)) / 'msg' / f'{type_name}.msg'
        return path.read_text(encoding='utf-8')
    except (ImportError, LookupError, ValueError, OSError):
        pass
    try:
        text, _ = typestore().generate_msgdef(f'{package}/msg/{type_name}', ros_version=2)
    except Exception as error:  # noqa: BLE001 - rosbags raises its own error types
        raise MessageDefinitionError(
            f'no .msg definition for {package}/{type_name}: {error}') from error
    return text.split(DELIMITER, 1)[0].removesuffix('\n') if DELIMITER in text else text


def _text_of(name: str, legacy: bool = False) -> str:
    """Return the .msg text of ``pkg/Type`` or ``pkg/msg/Type``."""
    package, type_name = _split_type_name(name)
    if package != MSGS_PACKAGE:
        return _dependency_text(package, type_name)
    try:
        return _texts(legacy)[f'{package}/msg/{type_name}']
    except KeyError:
        raise MessageDefinitionError(f'no .msg definition for {name!r}') from None


@functools.lru_cache(maxsize=None)
def full_definition(msgtype: str, legacy: bool = False) -> str:
    """Return the ``ros2msg`` schema text of ``msgtype`` exactly as rosbag2 writes it.

    The top-level .msg text comes first, verbatim; each dependency follows once, depth-first in
    sorted order, as a newline, a line of 80 ``=``, a line ``MSG: pkg/Type`` (the dependency named
    relative to its package, as the .msg spells it) and its .msg text. ``legacy=True``: the
    text of the interface-version-2 definition (:data:`LEGACY_MSG_TEXTS`).
    """
    seen: set[str] = set()

    def append(name: str) -> str:
        package, _ = _split_type_name(name)
        text = _text_of(name, legacy)
        parts = [text]
        for dependency in _dependencies(text, package):
            if dependency not in seen:
                seen.add(dependency)
                parts.append('\n' + DELIMITER + f'MSG: {dependency}\n' + append(dependency))
        return ''.join(parts)

    return append(msgtype)


@functools.lru_cache(maxsize=None)
def type_hash(msgtype: str, legacy: bool = False) -> str:
    """Return the RIHS01 type description hash of ``msgtype`` (``RIHS01_<hex>``).

    ``legacy=True``: the hash of its interface-version-2 definition (:data:`LEGACY_MSG_TEXTS`).
    """
    return typestore(legacy).hash_rihs01(msgtype)


def recorded_definition(msgtype: str, digest: str, text: str) -> str:
    """Return how a bag's recorded definition of ``msgtype`` compares with ours.

    ``'same'``, ``'legacy'`` (an earlier definition this build still reads), ``'different'``, or
    ``''`` for a type that is not one of this package's channel types. ``digest`` (RIHS01 hash in
    metadata.yaml) and ``text`` (the MCAP schema) may be empty.
    """
    if msgtype not in CHANNEL_BY_TYPE:
        return ''
    text = text.strip()
    if _recorded_matches(msgtype, digest, text, legacy=False):
        return 'same'
    if msgtype in LEGACY_TYPES and (digest or text) and _recorded_matches(
            msgtype, digest, text, legacy=True):
        return 'legacy'
    return 'different'


def _recorded_matches(msgtype: str, digest: str, text: str, legacy: bool) -> bool:
    """Return True when the recorded hash and schema text (either may be empty) are ours.

    The texts are compared without their comments and blank lines: a writer without the ament
    index (the dependencies' definitions from rosbags' store, comments left out) records the
    same definition, and the same RIHS01 hash, as one with it.
    """
    if digest and digest != type_hash(msgtype, legacy):
        return False
    return not text or _without_comments(text) == _without_comments(
        full_definition(msgtype, legacy))


def _without_comments(text: str) -> list[str]:
    """Return the lines of a .msg schema text without comments, blank lines or trailing space."""
    lines = []
    for line in text.splitlines():
        quote = None
        for index, char in enumerate(line):
            if quote is None and char in '"\'':
                quote = char
            elif char == quote:
                quote = None
            elif char == '#' and quote is None:
                line = line[:index]
                break
        line = line.rstrip()
        if line:
            lines.append(line)
    return lines
