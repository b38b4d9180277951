# SPDX-License-Identifier: Apache-2.0
"""Registry of adjustment policies by name, and construction from plain parameter values.

Also the parsing every command line shares: ``key=value`` settings (:func:`parse_setting`),
text values typed like the parameter's default (:func:`coerce_parameters`) and a policy with its
settings, ``NAME[:k=v,...]`` (:func:`parse_policy` -> :class:`PolicySpec`), the one parser of
``--policy`` for ``ghost-feedback replay``, ``evaluate`` and ``audit``.

Every registered policy is a frozen dataclass whose fields are its parameters (with defaults) and
whose ``__post_init__`` validates them. Adding a policy is one line in ``POLICIES``. The node
declares one ROS parameter per field, named ``<policy_name>.<field>``.
"""

from __future__ import annotations

from collections.abc import Mapping
import dataclasses
from typing import ClassVar, Protocol, TYPE_CHECKING

from .calibrated_policies import CalibratedExceedancePolicy
from .likelihood_ratio_policy import BucketLikelihoodRatioPolicy
from .graded_policy import OverconfidenceScalePolicy
from .reference_policy import MahalanobisDowngradePolicy
from .vec3_scale_policy import Vec3ScalePolicy

if TYPE_CHECKING:
    from .protocols import CalibrationAdjustmentPolicy

    class RegisteredPolicy(CalibrationAdjustmentPolicy, Protocol):
        """A registered policy: a dataclass whose fields are its parameters (module docstring)."""

        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[object]]]


ParameterRange = tuple[tuple[float, float], str]
"""``((low, high), description)`` of one parameter (a policy's ``PARAMETER_RANGES`` values)."""

POLICIES: dict[str, type[RegisteredPolicy]] = {
    'mahalanobis_downgrade': MahalanobisDowngradePolicy,
    'calibrated_exceedance': CalibratedExceedancePolicy,
    'bucket_likelihood_ratio': BucketLikelihoodRatioPolicy,
    'overconfidence_scale': OverconfidenceScalePolicy,
    'vec3_scale': Vec3ScalePolicy,
}
"""Policy name -> policy class. The name equals the class's ``policy_id``."""

DEFAULT_POLICY = 'vec3_scale'
"""The default of the node, replay, evaluate, the audit and the demos: graded policy v3.

``vec3_scale`` grades each vec3 on the squared distances of a schema-2 history (a window CUSUM
for one step, per-vec3 bounds, a fast CUSUM and a 10-sigma outcome for UNKNOWN), with hysteresis
through the loop's previous output: at a stated false-downgrade fraction (about 0.19% of full
windows of 32, a mean run of about 12 800 outcomes to the first false downgrade) it detects
1.5x / 2x / 10x in 6 / 2 / 1 outcomes (the full-information CUSUM limit), reaches UNKNOWN in 1
outcome at 10x and 50x, and changes level at most ~6 times per 1000 outcomes at any constant
overconfidence (``overconfidence_scale``, the previous default, up to 70). On a schema-1 history
(bags recorded before ADR-0026a) it answers as ``overconfidence_scale``. Figures, targets and
assumptions: docs/policies.md. A bag replays under the policy its recorded configuration names.
"""

PARAMETERS_ADDED: dict[str, dict[str, object]] = {
    'vec3_scale': {'gross_false_alarm_probability': 0.0, 'false_alarm_budget_per_day': 0.0,
                   'outcome_rate_hz': 0.0, 'bias_budget_share': 0.0,
                   'bias_threshold_margin': 0.0},
}
"""Policy -> parameters added after bags were recorded, each with the value that gives the
behaviour from before it existed: a recorded configuration without the parameter replays with
that value, not with today's default (``telemetry/config.py``)."""


def policy_names() -> list[str]:
    """Return the registered policy names, sorted."""
    return sorted(POLICIES)


def policy_parameter_ranges(name: str) -> dict[str, ParameterRange]:
    """Return ``{field: ((low, high), description)}`` that the policy ``name`` advertises.

    Empty for a policy without a ``PARAMETER_RANGES`` class attribute (ValueError for an unknown
    name).
    """
    return dict(getattr(_policy_class(name), 'PARAMETER_RANGES', {}))


def _policy_class(name: str) -> type[RegisteredPolicy]:
    try:
        return POLICIES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f'unknown policy {name!r} (registered: {", ".join(policy_names())})') from None


def policy_parameters(name: str) -> dict[str, object]:
    """Return ``{field: default}`` for the policy ``name`` (ValueError for an unknown name)."""
    return {
        f.name: f.default for f in dataclasses.fields(_policy_class(name))
        if f.init and f.default is not dataclasses.MISSING
    }


def make_policy(
        name: str, parameters: Mapping[str, object] | None = None,
) -> CalibrationAdjustmentPolicy:
    """Build the policy ``name`` from ``parameters`` (a mapping of field -> value).

    Missing fields take their defaults; an unknown field is a ValueError naming it; an invalid value
    raises the policy's own TypeError or ValueError.
    """
    cls = _policy_class(name)
    parameters = dict(parameters or {})
    known = policy_parameters(name)
    unknown = sorted(set(parameters) - set(known))
    if unknown:
        raise ValueError(
            f'policy {name!r} has no parameter(s) {", ".join(unknown)} '
            f'(it takes: {", ".join(sorted(known)) or "none"})')
    return cls(**parameters)


def parse_setting(text: str) -> tuple[str, str]:
    """Return ``(key, value text)`` of ``key=value`` (``--set``); ValueError otherwise.

    The value stays a string: :func:`coerce_parameters` gives it the type of the default.
    """
    key, sep, value = text.partition('=')
    key = key.strip()
    if not sep or not key:
        raise ValueError(f'expected key=value, got {text!r}')
    return key, value.strip()


def coerce_parameters(
        policy: str, parameters: Mapping[str, object] | None,
) -> dict[str, object]:
    """Return ``parameters`` with string values converted to the type of the policy's default.

    ``{'downgrade_threshold': '3'}`` -> ``{'downgrade_threshold': 3}``; a value that does not
    convert, or an unknown parameter, is a ValueError naming it.
    """
    defaults = policy_parameters(policy)
    unknown = sorted(set(parameters or {}) - set(defaults))
    if unknown:
        make_policy(policy, dict.fromkeys(unknown))  # raises the registry's own ValueError
    values: dict[str, object] = {}
    for key, value in (parameters or {}).items():
        default = defaults[key]
        if not isinstance(value, str) or isinstance(default, str):
            values[key] = value
            continue
        text = value.strip()
        try:
            if isinstance(default, bool):
                if text.lower() not in ('true', 'false'):
                    raise ValueError(text)
                values[key] = text.lower() == 'true'
            elif isinstance(default, int):
                values[key] = int(text)
            else:
                values[key] = float(text)
        except ValueError:
            raise ValueError(
                f'{key}={value}: expected {type(default).__name__} like the default '
                f'{default!r}') from None
    return values


@dataclasses.dataclass(frozen=True)
class PolicySpec:
    """A policy and its validated parameters as given on a command line (``NAME[:k=v,...]``)."""

    name: str
    parameters: tuple[tuple[str, object], ...] = ()

    @property
    def label(self) -> str:
        """Return ``name`` or ``name(k=v,...)``: the key of this policy in results."""
        if not self.parameters:
            return self.name
        return f'{self.name}({",".join(f"{k}={v!r}" for k, v in self.parameters)})'

    def make(self) -> CalibrationAdjustmentPolicy:
        """Return the policy object (ValueError/TypeError for an invalid parameter)."""
        return make_policy(self.name, dict(self.parameters))


def parse_policy(text: str) -> PolicySpec:
    """Parse ``NAME`` or ``NAME:k=v,k=v`` into a validated :class:`PolicySpec` (else ValueError)."""
    name, _, rest = text.partition(':')
    name = name.strip()
    if name not in POLICIES:
        raise ValueError(f'unknown policy {name!r} (known: {", ".join(policy_names())})')
    settings: dict[str, object] = {}
    for item in filter(None, (part.strip() for part in rest.split(','))):
        try:
            key, value = parse_setting(item)
        except ValueError:
            raise ValueError(f'{text!r}: expected NAME:key=value,...; got {item!r}') from None
        settings[key] = value
    try:
        values = coerce_parameters(name, settings)
    except ValueError as error:
        message = str(error)
        raise ValueError(message if name in message else f'{name}: {message}') from None
    spec = PolicySpec(name, tuple(sorted(values.items())))
    spec.make()
    return spec
