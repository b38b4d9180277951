# SPDX-License-Identifier: Apache-2.0
"""The dask driver: one task per bag on a dask.distributed cluster, summaries back.

By default an embedded ``LocalCluster`` (worker processes, one thread each, as many workers as
cores, no dashboard, every port on 127.0.0.1) that accepts only its own client: every connection
is TLS with mutual authentication by a key and certificate made for this cluster alone, in memory
(dask's ``Security.temporary()``), so another local process that finds the scheduler's port can
neither connect nor run code. With ``scheduler='tls://HOST:PORT'`` (and ``security``, see
:func:`scheduler_security`) or ``'tcp://HOST:PORT'`` an existing cluster, whose workers must see
the bag paths and have this package installed. dask exchanges pickles: whoever can talk to a
scheduler can run code on its workers, and a scheduler can run code on its clients.

Only paths and small parameters go to the workers and only the per-bag summary dicts come back;
a future is released as soon as its result is taken, so the scheduler never holds more than the
summaries still in flight.
"""

from collections.abc import Iterator, Sequence
import contextlib
import ipaddress
import logging
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
from typing import Any

from ..core.feedback import PolicySpec
from .injection import Injection
from .task import audit_bag, Bridge

CONNECT_TIMEOUT_S = 10


def local_cluster(workers: int, *, secure: bool = True,
                  local_directory: str | None = None) -> Any:
    """Return the embedded LocalCluster of ``workers`` worker processes (loopback only).

    ``secure`` (the default; False only for the benchmark's comparison): TLS with temporary
    credentials, so only a client given ``cluster.security`` (``Client(cluster)``) connects.
    ``local_directory``: where the workers keep their scratch space (default: dask's).
    """
    from dask.distributed import LocalCluster, Security

    return LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
        host='127.0.0.1', silence_logs=logging.CRITICAL, local_directory=local_directory,
        security=Security.temporary() if secure else None,
        # The scheduler serves its HTTP routes (health, metrics) even without the dashboard, by
        # default on port 8787: a free loopback port instead, so two audits never collide.
        scheduler_kwargs={'dashboard': False, 'dashboard_address': '127.0.0.1:0'})


def scheduler_security(ca_file: str, cert: str, key: str) -> Any:
    """Return the dask Security of a client of a ``tls://`` scheduler (files: PEM paths)."""
    from dask.distributed import Security

    return Security(tls_ca_file=ca_file, tls_client_cert=cert, tls_client_key=key,
                    require_encryption=True)


def is_loopback(address: str) -> bool:
    """Return True when the host of ``PROTOCOL://HOST:PORT`` is a loopback address."""
    host = address.split('://', 1)[-1].rsplit(':', 1)[0].strip('[]')
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _error_result(path: object, error: BaseException) -> dict[str, Any]:
    text = ' '.join(str(error).split()) or type(error).__name__
    return {'bag': str(path), 'ok': False, 'error': f'{type(error).__name__}: {text}'[:500]}


def run_audit(bags: Sequence[str | os.PathLike[str]], policies: Sequence[PolicySpec], *,
              max_history: int, injection: Injection | None = None,
              scheduler: str | None = None, workers: int | None = None, progress: bool = True,
              client: Any = None, security: Any = None,
              bridge: Bridge | None = None) -> list[dict[str, Any]]:
    """Audit every bag of ``bags`` under ``policies``; return the per-bag results in bag order.

    ``client`` (a dask ``Client``) is used as is when given (tests); otherwise one is made for
    ``scheduler`` (with ``security``, a dask Security, for ``tls://``) or for an embedded
    LocalCluster of ``workers`` workers (default: cores), and closed afterwards. A task that
    raises (a worker lost, a bug) becomes that bag's error result.
    ``bridge``: see :func:`~.task.audit_bag` (ordinary bags through the bridge's engine).
    """
    own_client: Any = None
    own_cluster: Any = None
    scratch: str | None = None
    try:
        if client is None and scheduler:
            from dask.distributed import Client

            client = own_client = Client(scheduler, timeout=CONNECT_TIMEOUT_S,
                                         security=security)
        elif client is None:
            before = set(multiprocessing.active_children())
            scratch = tempfile.mkdtemp(prefix='ghost-feedback-audit-')
            # An interrupt in the middle of dask's start-up leaves a cluster that cannot be
            # closed: it is held until the cluster and its client are up, then raised. dask is
            # imported in the block, so the threads its imports start inherit the block.
            with _interrupts_deferred():
                import dask
                from dask.distributed import Client

                with dask.config.set({'temporary-directory': scratch}):
                    own_cluster = local_cluster(workers or os.cpu_count() or 1,
                                                local_directory=scratch)
                    client = own_client = Client(own_cluster)
        from dask.distributed import as_completed
        from tqdm import tqdm

        futures: dict[Any, int] = {}
        for index, path in enumerate(bags):
            future = client.submit(
                audit_bag, str(path), tuple(policies), max_history=max_history,
                injection=injection, bridge=bridge,
                pure=False)  # a fresh key: never a cached result
            futures[future] = index
        results: list[Any] = [None] * len(bags)
        with tqdm(total=len(bags), unit='bag', file=sys.stderr, disable=not progress,
                  desc='audit') as bar:
            # The loop of *this* client: as_completed's default is the process's default client,
            # which can be another one (a failed Client() to some other scheduler stays the
            # default while anything holds it), whose loop never sees these futures finish.
            for future in as_completed(futures, loop=client.loop):
                index = futures.pop(future)
                try:
                    results[index] = future.result()
                except Exception as error:  # noqa: BLE001 - the bag fails, the audit goes on
                    results[index] = _error_result(bags[index], error)
                future.release()
                bar.update(1)
        return results
    except BaseException:
        logging.getLogger('distributed').setLevel(logging.CRITICAL + 1)  # no noise on the way out
        raise
    finally:
        with _signals_held():
            if own_client is not None:
                own_client.close()
            if own_cluster is not None:
                own_cluster.close()
            if scratch is not None:
                _end_worker_processes(before)
                shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM while the cluster is closed (a second Ctrl-C cannot cut it)."""
    saved: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGTERM):
            saved[number] = signal.signal(number, signal.SIG_IGN)
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM in the block; raise KeyboardInterrupt after it if one came.

    The worker processes are spawned here with SIGINT ignored, which they keep: a Ctrl-C that
    the terminal sends to the whole process group reaches only this process, which closes the
    cluster. This thread (and the threads dask starts here, which inherit its mask) blocks
    SIGINT meanwhile, so a Ctrl-C stays pending until the block ends; SIGTERM is recorded.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # started later, it would unblock SIGINT in its thread
    received: list[int] = []
    saved_term = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    saved_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved_int)
        signal.signal(signal.SIGTERM, saved_term)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a held one is raised now
    if received:
        raise KeyboardInterrupt


def _end_worker_processes(before: set[multiprocessing.process.BaseProcess],
                          timeout_s: float = 5) -> None:
    """Terminate the worker processes not in ``before`` still alive (after an interrupt)."""
    children = [child for child in multiprocessing.active_children() if child not in before]
    for child in children:
        child.terminate()
    for child in children:
        child.join(timeout_s)
        if child.is_alive():
            child.kill()
