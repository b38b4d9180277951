# SPDX-License-Identifier: Apache-2.0
"""The one place the benches and the tests of ``vec3_scale`` build a schema-2 history from squares.

CalibrationHistory schema 2 (ADR-0026a: ``position_squared_distances`` and
``orientation_squared_distances``, oldest first, ``+inf`` legal) is built here with the core's own
constructor, from given squared distances. Each square is re-squared from its root (``d = sqrt(x)``,
``d * d``) so the invariant ``max(d2) == worst * worst`` holds exactly (at most one ulp away from
the input).
"""

from collections.abc import Iterable
import math


from project_ghost_feedback.core import bucket_of_distance
from project_ghost_feedback.core.feedback import (
    CalibrationHistory,
    HISTORY_SCHEMA_SQUARED_DISTANCES,
)


def schema2_history(position_squared: Iterable[float], orientation_squared: Iterable[float],
                    stamp: int = 0) -> CalibrationHistory:
    """Return the schema-2 history of a window given both vec3's squared distances, oldest first."""
    position = [math.sqrt(float(x)) for x in position_squared]
    orientation = [math.sqrt(float(x)) for x in orientation_squared]
    n = len(position)
    if len(orientation) != n:
        raise ValueError('both vec3 need one squared distance per outcome')
    if n == 0:
        return CalibrationHistory.empty(HISTORY_SCHEMA_SQUARED_DISTANCES)
    counts = [0, 0, 0, 0]
    for p, o in zip(position, orientation):
        counts[bucket_of_distance(max(p, o))] += 1
    within_1, beyond_1, beyond_3, beyond_5 = counts
    return CalibrationHistory(
        n, within_1, beyond_1, beyond_3, beyond_5, max(position), max(orientation), stamp,
        schema_version=HISTORY_SCHEMA_SQUARED_DISTANCES,
        position_squared_distances=tuple(d * d for d in position),
        orientation_squared_distances=tuple(d * d for d in orientation))
