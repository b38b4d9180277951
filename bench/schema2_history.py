# SPDX-License-Identifier: Apache-2.0
"""The one place that builds a history with the squared distances of CalibrationHistory schema 2.

Until schema 2 (issue 20, requirement 1: ``position_squared_distances`` and
``orientation_squared_distances``, oldest first, ``+inf`` legal, length ``outcomes_considered``)
lands on this branch, a test-only frozen subclass of the schema-1 CalibrationHistory carries the
two agreed fields. When it lands, :func:`schema2_history` becomes a call of the real constructor
(or ``build_calibration_history``) and nothing else changes: the benches and the tests of
``vec3_scale`` build every schema-2 history here.
"""

from dataclasses import dataclass
import math
import pathlib
import sys

_PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[1] / 'project_ghost_feedback'
if str(_PACKAGE_ROOT) not in sys.path:
    sys.path.insert(0, str(_PACKAGE_ROOT))

from project_ghost_feedback.core import bucket_of_distance  # noqa: E402
from project_ghost_feedback.core.feedback import CalibrationHistory  # noqa: E402


@dataclass(frozen=True, slots=True)
class Schema2StubHistory(CalibrationHistory):
    """A schema-1 history plus the two agreed schema-2 fields (test and bench only)."""

    position_squared_distances: tuple = ()
    orientation_squared_distances: tuple = ()


def schema2_history(position_squared, orientation_squared, stamp=0):
    """Return the history of a window given both vec3's squared distances, oldest first."""
    position_squared = tuple(float(x) for x in position_squared)
    orientation_squared = tuple(float(x) for x in orientation_squared)
    n = len(position_squared)
    if len(orientation_squared) != n:
        raise ValueError('both vec3 need one squared distance per outcome')
    if n == 0:
        return Schema2StubHistory(0, 0, 0, 0, 0, 0.0, 0.0, None)
    counts = [0, 0, 0, 0]
    for p, o in zip(position_squared, orientation_squared):
        counts[bucket_of_distance(math.sqrt(max(p, o)))] += 1
    return Schema2StubHistory(
        n, *counts, math.sqrt(max(position_squared)), math.sqrt(max(orientation_squared)),
        stamp, position_squared_distances=position_squared,
        orientation_squared_distances=orientation_squared)
