# SPDX-License-Identifier: Apache-2.0
"""What each policy parameter means and the range its policy enforces, for descriptors and docs.

Keyed by dataclass field name (the policies share field names for the same meaning). A range is
``(minimum, maximum)``, inclusive, as the policy's ``__post_init__`` checks it; ``None`` on a side
means unbounded. The node advertises these in its ParameterDescriptors; a property test checks
that every value inside an advertised range either builds the policy or is refused with a
ContractViolation, never another exception.
"""

from .calibrated_policies import MAX_DOF, MAX_VECTORS, MAX_WINDOW, MIN_PROBABILITY

PARAMETER_DOCS = {
    'min_outcomes': ('Outcomes the window must hold before any downgrade.', (1, 2**31 - 1)),
    'downgrade_threshold': (
        'Outcomes beyond 3 std (buckets beyond_3 + beyond_5) that trigger a downgrade.',
        (1, 2**31 - 1)),
    'false_alarm_probability': (
        'Probability that a calibrated estimator is downgraded one level, per full window.',
        (MIN_PROBABILITY, 0.5)),
    'gross_false_alarm_probability': (
        'Probability that a calibrated estimator is downgraded two levels (<= '
        'false_alarm_probability).', (MIN_PROBABILITY, 0.5)),
    'degrees_of_freedom': (
        'Degrees of freedom of each vec3 distance (3; 2 for a planar estimate whose z is not '
        'estimated).', (1, MAX_DOF)),
    'vectors_per_outcome': (
        'Distances per outcome whose worse decides the bucket (2: position and orientation).',
        (1, MAX_VECTORS)),
    'max_window': (
        'Largest window the thresholds are tabulated for at construction (computed on demand '
        'beyond).', (1, MAX_WINDOW)),
    'design_overconfidence': (
        'Overconfidence factor the likelihood ratio is most powerful against (> 1).', (1.0, 10.0)),
}
"""Field name -> (meaning, (minimum, maximum))."""


def parameter_doc(field: str) -> tuple[str, tuple[float, float] | None]:
    """Return ``(meaning, range)`` of a policy field; an unknown field gets a generic meaning."""
    return PARAMETER_DOCS.get(field, (f'Policy parameter {field!r} (see docs/policies.md).', None))
