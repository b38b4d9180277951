# SPDX-License-Identifier: Apache-2.0
"""Benchmark of the policies' threshold tables at the largest window each one accepts (issue 34).

Run from the repository root with ``python bench/policy_bounds_bench.py``. Each measurement runs
in a fresh process (no table memoized by an earlier one) and prints, per policy:

- ``largest``: the largest ``max_history`` ``LoopConfig.make`` accepts with it (the node's range,
  or the policy's ``MAX_HISTORY``);
- ``cold``: seconds for ``thresholds(largest)`` in a fresh process, i.e. the longest the data
  path can wait for a table when a window jumps from empty to full at once;
- ``next``: seconds for the one after it (``thresholds(largest - 1)``), what a sliding window
  costs once warm.

Figures only, never a gate (docs/benchmarks.md).
"""

import os
import platform
import subprocess
import sys

CHILD = r"""
import sys, time
from project_ghost_feedback.core.feedback import make_policy
from project_ghost_feedback.core.loop import MAX_HISTORY_RANGE
policy = make_policy(sys.argv[1])
largest = min(MAX_HISTORY_RANGE[1], getattr(policy, 'MAX_HISTORY', MAX_HISTORY_RANGE[1]))
start = time.perf_counter()
policy.thresholds(largest)
cold = time.perf_counter() - start
start = time.perf_counter()
policy.thresholds(largest - 1)
warm = time.perf_counter() - start
print(largest, cold, warm)
"""


def main() -> None:
    """Print the figures of every policy with thresholds."""
    from project_ghost_feedback.core.feedback import make_policy, policy_names

    print(f'machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, '
          f'load {os.getloadavg()[0]:.1f}, Python {platform.python_version()}')
    print(f'{"policy":<26} {"largest":>8} {"cold s":>9} {"next s":>9}')
    for name in policy_names():
        if not hasattr(make_policy(name), 'thresholds'):
            print(f'{name:<26} {"-":>8} (no tables)')
            continue
        result = subprocess.run([sys.executable, '-c', CHILD, name], capture_output=True,
                                text=True, check=True)
        largest, cold, warm = result.stdout.split()
        print(f'{name:<26} {largest:>8} {float(cold):>9.4f} {float(warm):>9.4f}')


if __name__ == '__main__':
    main()
