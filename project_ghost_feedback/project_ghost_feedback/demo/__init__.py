# SPDX-License-Identifier: Apache-2.0
"""The demo: a synthetic estimator, the feedback node and a telemetry bag, on one machine.

``ghost-feedback demo`` (``make demo``) calls :func:`main`.
"""


def main(argv=None):
    """Run the demo (see ``ghost-feedback demo --help``); return the exit code."""
    from .run import main as run_main
    return run_main(argv)
