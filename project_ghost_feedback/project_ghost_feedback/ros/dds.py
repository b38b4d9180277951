# SPDX-License-Identifier: Apache-2.0
"""Keep DDS on this machine unless the user explicitly chose otherwise.

``scripts/env.sh`` (which every Makefile target sources) already exports
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` and a loopback-only Fast DDS profile. The two demos
(``ghost-feedback demo``, both scenarios) call :func:`ensure_loopback` too, so a demo started
outside that environment still does not send discovery traffic off the machine; the nodes and the
other commands rely on the environment (``scripts/env.sh``, or the ROS install's own settings).
Export ``ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET`` to talk to other hosts on purpose.
"""

from collections.abc import MutableMapping
import os


def ensure_loopback(environ: MutableMapping[str, str] | None = None) -> str:
    """Set ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` when it is unset; return the range in force.

    Must run before ``rclpy.init``; child processes inherit the setting.
    """
    environ = os.environ if environ is None else environ
    if not environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE'):
        environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    return environ['ROS_AUTOMATIC_DISCOVERY_RANGE']
