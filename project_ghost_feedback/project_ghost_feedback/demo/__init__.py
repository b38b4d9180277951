# SPDX-License-Identifier: Apache-2.0
"""The demos: the simulator stack (default) or a synthetic estimator, on one machine.

``ghost-feedback demo`` (``make demo``) calls :func:`main`: the simulator -> outcome bridge ->
feedback node -> telemetry bag demo (``stack_demo``); ``--scenario synthetic`` the synthetic one
(``run``).
"""


def main(argv: list[str] | None = None) -> int:
    """Run the demo (see ``ghost-feedback demo --help``); return the exit code."""
    from .stack_demo import main as stack_main
    return stack_main(argv)
