# SPDX-License-Identifier: Apache-2.0
"""Validation helpers shared by the core contracts (stdlib only).

Every helper raises ``TypeError`` for a value of the wrong type and ``ValueError`` for a value of
the right type outside its domain; both messages name the owner, the field and the bad value.
``bool`` is never accepted where an ``int`` is expected.
"""

import math
import re

INT64_MAX = 2**63 - 1
UINT32_MAX = 2**32 - 1

TAXONOMY_PATTERN = re.compile(r'[a-z][a-z0-9_]*')
TAXONOMY_MAX_LEN = 64

# Memo of strings already found to be valid taxonomy (bounded): a pure cache of a pure check, it
# only saves the regular expression on the hot path (policy ids and reasons repeat).
_KNOWN_TAXONOMY = set()
_KNOWN_TAXONOMY_MAX = 1024


def _where(owner, field):
    return f'{owner}.{field}'


def require_int(owner, field, value, *, minimum=0, maximum=INT64_MAX):
    """Return ``value`` if it is an ``int`` (not ``bool``) within ``[minimum, maximum]``."""
    if type(value) is int and minimum <= value <= maximum:
        return value
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f'{_where(owner, field)} must be an int, got {type(value).__name__} {value!r}')
        value = int(value)
    if value < minimum or value > maximum:
        raise ValueError(
            f'{_where(owner, field)} must be in [{minimum}, {maximum}], got {value!r}')
    return value


def require_distance(owner, field, value):
    """Return ``value`` as a float if it is a legal unsquared Mahalanobis distance.

    Legal: a real number (``int`` or ``float``, not ``bool``), ``>= 0``, not NaN; ``+inf`` is legal.
    """
    if type(value) is float and value >= 0.0:  # NaN fails the comparison
        return value
    if type(value) is not float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(
                f'{_where(owner, field)} must be a float, got {type(value).__name__} {value!r}')
        value = float(value)
    if value != value:
        raise ValueError(f'{_where(owner, field)} must not be NaN')
    if value < 0.0:
        raise ValueError(f'{_where(owner, field)} must be >= 0 (+inf allowed), got {value!r}')
    return value


def require_finite(owner, field, value):
    """Return ``value`` as a float if it is a finite real number (not ``bool``)."""
    if type(value) is not float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(
                f'{_where(owner, field)} must be a float, got {type(value).__name__} {value!r}')
        value = float(value)
    if not math.isfinite(value):
        raise ValueError(f'{_where(owner, field)} must be finite, got {value!r}')
    return value


def require_vec3(owner, field, value):
    """Return ``value`` as a tuple of three finite floats."""
    if isinstance(value, (str, bytes)) or not hasattr(value, '__len__'):
        raise TypeError(
            f'{_where(owner, field)} must be a sequence of 3 floats, '
            f'got {type(value).__name__} {value!r}')
    if len(value) != 3:
        raise ValueError(
            f'{_where(owner, field)} must have exactly 3 elements, got {len(value)}: {value!r}')
    return tuple(require_finite(owner, f'{field}[{i}]', v) for i, v in enumerate(value))


def require_taxonomy(owner, field, value):
    """Return ``value`` if it is a taxonomy string: ``^[a-z][a-z0-9_]*$``, 1-64 characters."""
    if type(value) is str and value in _KNOWN_TAXONOMY:
        return value
    if type(value) is not str:
        raise TypeError(
            f'{_where(owner, field)} must be a str, got {type(value).__name__} {value!r}')
    if not 1 <= len(value) <= TAXONOMY_MAX_LEN or TAXONOMY_PATTERN.fullmatch(value) is None:
        raise ValueError(
            f'{_where(owner, field)} must match ^[a-z][a-z0-9_]*$ with 1-{TAXONOMY_MAX_LEN} '
            f'characters, got {value!r}')
    if len(_KNOWN_TAXONOMY) < _KNOWN_TAXONOMY_MAX:
        _KNOWN_TAXONOMY.add(value)
    return value


def require_instance(owner, field, value, cls):
    """Return ``value`` if it is an instance of ``cls``."""
    if not isinstance(value, cls):
        raise TypeError(
            f'{_where(owner, field)} must be a {cls.__name__}, '
            f'got {type(value).__name__} {value!r}')
    return value


def require_schema_version(owner, value, supported):
    """Return ``value`` if it is the supported schema version (an int, not bool)."""
    if type(value) is not int:
        raise TypeError(
            f'{owner}.schema_version must be an int, got {type(value).__name__} {value!r}')
    if value != supported:
        raise ValueError(
            f'{owner}.schema_version {value!r} is not supported (this build reads {supported})')
    return value
