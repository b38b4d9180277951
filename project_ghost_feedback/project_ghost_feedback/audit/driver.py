# SPDX-License-Identifier: Apache-2.0
"""The dask driver: one task per bag on a dask.distributed cluster, summaries back.

By default an embedded ``LocalCluster`` (worker processes, one thread each, as many workers as
cores, no dashboard, every port on 127.0.0.1); with ``scheduler='tcp://HOST:PORT'`` an existing
cluster, whose workers must see the bag paths and have this package installed. Only paths and
small parameters go to the workers and only the per-bag summary dicts come back; a future is
released as soon as its result is taken, so the scheduler never holds more than the summaries
still in flight.
"""

import logging
import os
import sys

from .task import audit_bag

CONNECT_TIMEOUT_S = 10


def local_cluster(workers):
    """Return the embedded LocalCluster of ``workers`` worker processes (loopback only)."""
    from dask.distributed import LocalCluster

    return LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
        host='127.0.0.1', silence_logs=logging.ERROR,
        # The scheduler serves its HTTP routes (health, metrics) even without the dashboard, by
        # default on port 8787: a free loopback port instead, so two audits never collide.
        scheduler_kwargs={'dashboard': False, 'dashboard_address': '127.0.0.1:0'})


def _error_result(path, error):
    text = ' '.join(str(error).split()) or type(error).__name__
    return {'bag': str(path), 'ok': False, 'error': f'{type(error).__name__}: {text}'[:500]}


def run_audit(bags, policies, *, max_history, injection=None, scheduler=None, workers=None,
              progress=True, client=None, bridge=None):
    """Audit every bag of ``bags`` under ``policies``; return the per-bag results in bag order.

    ``client`` (a dask ``Client``) is used as is when given (tests); otherwise one is made for
    ``scheduler`` or for an embedded LocalCluster of ``workers`` workers (default: cores), and
    closed afterwards. A task that raises (a worker lost, a bug) becomes that bag's error result.
    ``bridge``: see :func:`~.task.audit_bag` (ordinary bags through the bridge's engine).
    """
    from dask.distributed import as_completed, Client
    from tqdm import tqdm

    own_client = own_cluster = None
    if client is None:
        if scheduler:
            client = own_client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        else:
            own_cluster = local_cluster(workers or os.cpu_count() or 1)
            client = own_client = Client(own_cluster)
    try:
        futures = {}
        for index, path in enumerate(bags):
            future = client.submit(
                audit_bag, str(path), tuple(policies), max_history=max_history,
                injection=injection, bridge=bridge,
                pure=False)  # a fresh key: never a cached result
            futures[future] = index
        results = [None] * len(bags)
        with tqdm(total=len(bags), unit='bag', file=sys.stderr, disable=not progress,
                  desc='audit') as bar:
            for future in as_completed(futures):
                index = futures.pop(future)
                try:
                    results[index] = future.result()
                except Exception as error:  # noqa: BLE001 - the bag fails, the audit goes on
                    results[index] = _error_result(bags[index], error)
                future.release()
                bar.update(1)
        return results
    finally:
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()
