# SPDX-License-Identifier: Apache-2.0
"""Fleet audit: many telemetry bags, many policies, on dask.distributed (``ghost-feedback audit``).

Modules by role (see ``docs/audit.md``):

- :mod:`.discovery`: find bag directories under the given paths.
- :mod:`.injection`: ``--inject K[@T]``: scale recorded outcomes from an instant on.
- :mod:`.task`: the pure per-bag task: replay one bag under N policies -> a small summary dict.
- :mod:`.driver`: submit one task per bag to a dask cluster (embedded LocalCluster by default).
- :mod:`.report`: the JSON document (fleet totals) and the self-contained HTML report.
- :mod:`.synthetic`: generated bags (tests, benchmark, docs).
"""

from .discovery import find_bags
from .driver import run_audit
from .injection import Injection, parse_injection
from .report import AUDIT_SCHEMA_VERSION, build_document, write_report
from .task import audit_bag

__all__ = [
    'AUDIT_SCHEMA_VERSION',
    'Injection',
    'audit_bag',
    'build_document',
    'find_bags',
    'parse_injection',
    'run_audit',
    'write_report',
]
