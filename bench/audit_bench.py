#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fleet audit throughput on dask.distributed: 1 vs 2 local workers, overhead vs a plain loop.

Run: ``source scripts/env.sh && python bench/audit_bench.py [--bags 200] [--assessments 3000]``
(``--quick``: 24 bags x 1000 assessments). The bags are generated first, in a child process,
by the project's recorder (calibrated, 10 Hz). Measured in the same run, all on the same bags and
the three registered policies:

- loop replay_bag: ``replay_bag(path, policy=p)`` for every bag and policy, one process (what
  ``ghost-feedback replay`` does, bag by bag);
- loop audit_bag: the audit's per-bag task in a plain loop, one process (no dask);
- dask 1 / 2 workers: ``run_audit`` on an embedded LocalCluster already started (its start-up
  is printed apart), TLS with temporary credentials as the audit runs it;
- dask 2 workers, plain TCP: the same cluster without TLS, to measure what the security costs
  (issue 22: TLS <= 10% slower than plain TCP at 2 workers). The 2-worker TLS and TCP runs
  alternate ``--pairs`` times (default 2) and the best of each is compared.

Rates are bag-assessments per second (each replayed under every policy). Peak RSS: the client
(this process, after the dask runs and before the in-process loops) and each worker
(``ru_maxrss``). Cluster start-up, printed apart, includes a warm-up task on every worker
(imports, codecs). Targets (issue 15): 2 workers >= 1.7x 1 worker; dask at 1 worker <= 15% slower
than the loop of replay_bag. Printed, never asserted: the machine is shared.
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any, TypeVar

from project_ghost_feedback.audit import run_audit
from project_ghost_feedback.core.feedback import parse_policy
from project_ghost_feedback.audit.driver import local_cluster
from project_ghost_feedback.audit.task import audit_bag
from project_ghost_feedback.core.feedback import policy_names
from project_ghost_feedback.telemetry import replay_bag

_T = TypeVar('_T')


def _generate(directory: str, bags: int, assessments: int) -> list[str]:
    code = ('import sys; from project_ghost_feedback.audit.synthetic import write_fleet; '
            'write_fleet(sys.argv[1], int(sys.argv[2]), assessments=int(sys.argv[3]))')
    subprocess.run([sys.executable, '-c', code, directory, str(bags), str(assessments)],
                   check=True)
    return sorted(os.path.join(directory, name) for name in os.listdir(directory))


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _timed(function: Callable[[], _T]) -> tuple[float, _T]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--bags', type=int, default=200)
    parser.add_argument('--assessments', type=int, default=3000)
    parser.add_argument('--quick', action='store_true', help='24 bags x 1000 assessments')
    parser.add_argument('--pairs', type=int, default=2,
                        help='alternating 2-worker TLS / TCP runs (best of each is compared)')
    args = parser.parse_args(argv)
    if args.quick:
        args.bags, args.assessments = 24, 1000
    specs = [parse_policy(name) for name in policy_names()]
    total = args.bags * args.assessments
    directory = tempfile.mkdtemp(prefix='audit_bench_')
    try:
        seconds, bags = _timed(lambda: _generate(directory, args.bags, args.assessments))
        print(f'audit bench: {args.bags} bags x {args.assessments} assessments '
              f'({total} assessments, {len(specs)} policies each), {os.cpu_count()} CPUs, '
              f'load {os.getloadavg()[0]:.1f}; generated in {seconds:.1f} s')
        rates: dict[str, float] = {}
        worker_rss: dict[int, Any] = {}
        runs = [(1, True)] + [(2, secure) for _ in range(args.pairs) for secure in (True, False)]
        for workers, secure in runs:
            start, cluster = _timed(lambda: local_cluster(workers, secure=secure))  # noqa: B023
            from dask.distributed import Client

            client = Client(cluster)
            name = f'dask {workers} worker(s)' + ('' if secure else ' tcp')
            try:
                warm = bags[0]
                start += _timed(lambda: client.run(  # noqa: B023 - imports, typestore, codecs
                    audit_bag, warm, specs, max_history=32))[0]
                seconds, results = _timed(lambda: run_audit(  # noqa: B023
                    bags, specs, max_history=32, client=client, progress=False))
                assert all(r['ok'] for r in results), [r for r in results if not r['ok']][:1]
                rates[name] = max(rates.get(name, 0.0), total / seconds)
                worker_rss[workers] = max(client.run(_rss_mib).values())
                print(f'  {name + (" tls" if secure else ""):22} {total / seconds:10,.0f} '
                      f'assessments/s ({seconds:.1f} s; cluster start + warm-up {start:.1f} s)')
            finally:
                client.close()
                cluster.close()
        client_rss = _rss_mib()
        seconds, _ = _timed(lambda: [audit_bag(b, specs, max_history=32) for b in bags])
        rates['loop audit_bag'] = total / seconds
        print(f'  loop audit_bag:       {total / seconds:10,.0f} assessments/s ({seconds:.1f} s)')
        seconds, _ = _timed(lambda: [replay_bag(b, policy=s.name, max_history=32)
                                     for b in bags for s in specs])
        rates['loop replay_bag'] = total / seconds
        print(f'  loop replay_bag:      {total / seconds:10,.0f} assessments/s ({seconds:.1f} s)')
        one, two = rates['dask 1 worker(s)'], rates['dask 2 worker(s)']
        print(f'2 workers / 1 worker: {two / one:.2f}x (target >= 1.7x)')
        tcp = rates['dask 2 worker(s) tcp']
        print(f'TLS vs plain TCP at 2 workers (best of {args.pairs}): {tcp / two - 1:+.1%} time '
              '(target <= +10%)')
        print(f'dask 1 worker vs loop replay_bag: {rates["loop replay_bag"] / one - 1:+.1%} time '
              f'(target <= +15%); vs loop audit_bag: {rates["loop audit_bag"] / one - 1:+.1%}')
        print(f'peak RSS: client {client_rss:.0f} MiB (after the dask runs); worker '
              f'{worker_rss[1]:.0f} MiB (1 worker), {worker_rss[2]:.0f} MiB (2 workers)')
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
