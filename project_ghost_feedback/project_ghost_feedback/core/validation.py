# SPDX-License-Identifier: Apache-2.0
"""Validation helpers shared by the core contracts (stdlib only).

Every helper raises :class:`ContractTypeError` (a ``TypeError``) for a value of the wrong type and
:class:`ContractValueError` (a ``ValueError``) for a value of the right type outside its domain.
Both carry ``field`` (``Owner.field``) and ``code`` (a short taxonomy such as ``nan``) so that a
node can count rejections per reason, and a message naming the field and the bad value.
``bool`` is never accepted where an ``int`` is expected.
"""

import math
import re
from collections.abc import Sequence
from typing import cast, TypeVar

_T = TypeVar('_T')

_isfinite = math.isfinite

INT64_MAX = 2**63 - 1
# Largest stamp a builtin_interfaces/Time (int32 sec, nanosec < 1e9) can carry, in nanoseconds.
STAMP_MAX_NS = (2**31 - 1) * 10**9 + 999_999_999
UINT32_MAX = 2**32 - 1

TAXONOMY_PATTERN = re.compile(r'[a-z][a-z0-9_]*')
TAXONOMY_MAX_LEN = 64
# Bounds of the v2 messages (bounded sequences and strings), enforced by the contracts too.
MAX_NAMED_LEVELS = 64
FRAME_ID_MAX_LEN = 256

# Memo of strings already found to be valid taxonomy (bounded): a pure cache of a pure check, it
# only saves the regular expression on the hot path (policy ids and reasons repeat).
_KNOWN_TAXONOMY: set[str] = set()
_KNOWN_TAXONOMY_MAX = 1024


class ContractViolation(Exception):
    """Base of the core's validation errors: ``field`` names what was wrong, ``code`` how."""

    def __init__(self, field: str, code: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.code = code

    @property
    def reason(self) -> str:
        """Return ``'<code>:<field>'``, a stable key for counting rejections."""
        return f'{self.code}:{self.field}'


class ContractTypeError(ContractViolation, TypeError):
    """A contract field got a value of the wrong type."""


class ContractValueError(ContractViolation, ValueError):
    """A contract field got a value of the right type outside its domain."""


def type_error(owner: str, field: str, expected: str, value: object) -> ContractTypeError:
    """Return a ContractTypeError saying ``owner.field`` must be ``expected``."""
    where = f'{owner}.{field}'
    return ContractTypeError(
        where, 'wrong_type', f'{where} must be {expected}, got {type(value).__name__} {value!r}')


def value_error(owner: str, field: str, code: str, message: str) -> ContractValueError:
    """Return a ContractValueError for ``owner.field`` with ``code`` and ``message``."""
    where = f'{owner}.{field}'
    return ContractValueError(where, code, f'{where} {message}')


def require_int(owner: str, field: str, value: object, *, minimum: int = 0,
                maximum: int = INT64_MAX) -> int:
    """Return ``value`` if it is an ``int`` (not ``bool``) within ``[minimum, maximum]``."""
    if type(value) is int and minimum <= value <= maximum:
        return value
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise type_error(owner, field, 'an int', value)
        value = int(value)
    if value < minimum or value > maximum:
        code = 'negative' if value < 0 <= minimum else 'out_of_range'
        raise value_error(owner, field, code, f'must be in [{minimum}, {maximum}], got {value!r}')
    return value


def _require_float(owner: str, field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise type_error(owner, field, 'a float', value)
    try:
        return float(value)
    except OverflowError:  # an int beyond the float range: a ValueError, not an OverflowError
        raise value_error(
            owner, field, 'out_of_range', f'is too large for a float, got {value!r}') from None


def require_distance(owner: str, field: str, value: object) -> float:
    """Return ``value`` as a float if it is a legal unsquared Mahalanobis distance.

    Legal: a real number (``int`` or ``float``, not ``bool``), ``>= 0``, not NaN; ``+inf`` is legal.
    """
    if type(value) is float and value >= 0.0:  # NaN fails the comparison
        return value
    value = _require_float(owner, field, value)
    if value != value:
        raise value_error(owner, field, 'nan', 'must not be NaN')
    if value < 0.0:
        raise value_error(owner, field, 'negative', f'must be >= 0 (+inf allowed), got {value!r}')
    return value


def require_finite(owner: str, field: str, value: object) -> float:
    """Return ``value`` as a float if it is a finite real number (not ``bool``)."""
    value = _require_float(owner, field, value)
    if not math.isfinite(value):
        raise value_error(
            owner, field, 'nan' if value != value else 'not_finite',
            f'must be finite, got {value!r}')
    return value


def require_vec3(owner: str, field: str, value: object) -> tuple[float, float, float]:
    """Return ``value`` as a tuple of three finite floats."""
    if type(value) is tuple and len(value) == 3:
        x, y, z = value
        if (type(x) is float and type(y) is float and type(z) is float
                and _isfinite(x) and _isfinite(y) and _isfinite(z)):
            return value
    if isinstance(value, (str, bytes)) or not hasattr(value, '__len__'):
        raise type_error(owner, field, 'a sequence of 3 floats', value)
    if len(value) != 3:
        raise value_error(
            owner, field, 'wrong_length',
            f'must have exactly 3 elements, got {len(value)}: {value!r}')
    items = cast('Sequence[object]', value)
    return cast('tuple[float, float, float]',
                tuple(require_finite(owner, f'{field}[{i}]', v) for i, v in enumerate(items)))


def require_taxonomy(owner: str, field: str, value: object) -> str:
    """Return ``value`` if it is a taxonomy string: ``^[a-z][a-z0-9_]*$``, 1-64 characters."""
    if type(value) is str and value in _KNOWN_TAXONOMY:
        return value
    if type(value) is not str:
        raise type_error(owner, field, 'a str', value)
    if not 1 <= len(value) <= TAXONOMY_MAX_LEN or TAXONOMY_PATTERN.fullmatch(value) is None:
        raise value_error(
            owner, field, 'bad_taxonomy',
            f'must match ^[a-z][a-z0-9_]*$ with 1-{TAXONOMY_MAX_LEN} characters, got {value!r}')
    if len(_KNOWN_TAXONOMY) < _KNOWN_TAXONOMY_MAX:
        _KNOWN_TAXONOMY.add(value)
    return value


def is_known_taxonomy(value: object) -> bool:
    """Return True if ``value`` is a str already accepted by :func:`require_taxonomy`."""
    return type(value) is str and value in _KNOWN_TAXONOMY


def require_frame_id(owner: str, field: str, value: object) -> str:
    """Return a frame id: a str of at most FRAME_ID_MAX_LEN characters (may be empty)."""
    if type(value) is not str:
        raise type_error(owner, field, 'a str', value)
    if len(value) > FRAME_ID_MAX_LEN:
        raise value_error(
            owner, field, 'too_long',
            f'has {len(value)} characters, at most {FRAME_ID_MAX_LEN} are allowed')
    return value


def require_instance(owner: str, field: str, value: object, cls: type[_T]) -> _T:
    """Return ``value`` if it is an instance of ``cls``."""
    if not isinstance(value, cls):
        raise type_error(owner, field, f'a {cls.__name__}', value)
    return value


def require_schema_version(owner: str, value: object, supported: int) -> int:
    """Return ``value`` if it is the supported schema version (an int, not bool)."""
    if type(value) is not int:
        raise type_error(owner, 'schema_version', 'an int', value)
    if value != supported:
        raise value_error(
            owner, 'schema_version', 'unsupported_schema_version',
            f'{value!r} is not supported (this build reads {supported})')
    return value
