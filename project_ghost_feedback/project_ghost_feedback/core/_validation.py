# SPDX-License-Identifier: Apache-2.0
"""The names core/feedback/ still imports under the old private name (see :mod:`.validation`).

The checks live in :mod:`.validation` (a public module: sim, msg_decoding and telemetry use it).
This alias goes once core/feedback/'s imports name :mod:`.validation`.
"""

from .validation import (
    is_known_taxonomy as is_known_taxonomy,
    require_distance as require_distance,
    require_instance as require_instance,
    require_int as require_int,
    require_schema_version as require_schema_version,
    require_taxonomy as require_taxonomy,
    STAMP_MAX_NS as STAMP_MAX_NS,
    type_error as type_error,
    UINT32_MAX as UINT32_MAX,
    value_error as value_error,
)
