# SPDX-License-Identifier: Apache-2.0
"""How both nodes declare and validate their parameters, without ROS.

- :class:`ParameterSpec`: one parameter's default, meaning and the rule its descriptor advertises
  (read-only, integer or float range, choices); the nodes' tables (``bridge/parameters.py``,
  ``ros/feedback_parameters.py``) are dicts of them, and ``ros/node_kit.py`` turns each into a
  ROS ``ParameterDescriptor``;
- :class:`ParameterError`: what a validator raises for a set of values it refuses (one line);
- :func:`check_ranges` and :func:`check_choice`: the spec's own rules, applied to values;
- :data:`EXECUTORS`: the choices of both nodes' ``executor`` parameter.

Standard library only: ``ghost-feedback evaluate`` and ``audit`` validate a bridge parameter file
with the bridge's own table and rules in a Python that has no rclpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MAX_TEXT = 300
"""Characters of a refusal reason, log line or /diagnostics value quoting a bad input, at most."""

EXECUTORS = ('single_threaded', 'events')
"""The ``executor`` parameter's choices (``ros/node_kit.make_executor`` builds them)."""


class ParameterError(ValueError):
    """A set of parameter values that a node refuses; the message is one line naming the value."""


def cap_text(text: object, limit: int = MAX_TEXT) -> str:
    """Return ``str(text)`` cut to ``limit`` characters, saying how long it was when cut."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f'{text[:limit]}... ({len(text)} characters)'


@dataclass(frozen=True)
class ParameterSpec:
    """One node parameter: default, meaning, and the rule its descriptor advertises."""

    default: object
    description: str
    read_only: bool = False
    integer_range: tuple[int, int] | None = None
    float_range: tuple[float, float] | None = None
    choices: tuple[str, ...] | None = None


def check_choice(name: str, value: object, choices: object) -> None:
    """Raise ParameterError unless ``value`` is one of ``choices`` (any container of them)."""
    if value not in choices:  # type: ignore[operator]
        raise ParameterError(
            f'{name} {cap_text(repr(value), 80)} is not one of {sorted(choices)}')  # type: ignore


def check_ranges(specs: Mapping[str, ParameterSpec], values: Mapping[str, object]) -> None:
    """Raise ParameterError for the first value outside its spec's range or choices."""
    for name, spec in specs.items():
        value = values[name]
        if spec.choices is not None:
            check_choice(name, value, spec.choices)
        bounds = spec.integer_range or spec.float_range
        if bounds is not None and not bounds[0] <= value <= bounds[1]:  # type: ignore[operator]
            raise ParameterError(f'{name} must be in [{bounds[0]}, {bounds[1]}], got {value!r}')
