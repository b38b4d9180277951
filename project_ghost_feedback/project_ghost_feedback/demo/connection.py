# SPDX-License-Identifier: Apache-2.0
"""Wait, before a demo plays, until the nodes it started are connected to each other and to it.

A message published to a volatile topic before its subscriber matched is gone: a demo that
started playing too early loses its first messages (under load, the nodes' discovery can take
seconds). Both demos wait with :func:`wait_for_nodes`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any


def wait_for_nodes(endpoint: Any, processes: dict[str, subprocess.Popen[Any]],
                   timeout_s: float = 30.0, poll_s: float = 0.05) -> bool:
    """Spin ``endpoint`` until ``endpoint.connected()``; return True, or False with a reason.

    ``endpoint`` has ``connected()`` and ``spin_for(seconds)``; ``processes`` maps a name to
    the ``subprocess.Popen`` of a node the demo started. Gives up (printing why on stderr) when a
    node exited or ``timeout_s`` passed.
    """
    deadline = time.monotonic() + timeout_s
    while not endpoint.connected():
        for name, process in processes.items():
            if process.poll() is not None:
                print(f'[demo] the {name} exited early (code {process.returncode})',
                      file=sys.stderr)
                return False
        if time.monotonic() > deadline:
            print(f'[demo] the {" and ".join(processes)} did not connect within '
                  f'{timeout_s:g} s', file=sys.stderr)
            return False
        endpoint.spin_for(poll_s)
    return True
