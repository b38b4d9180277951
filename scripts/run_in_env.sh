#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Run one command inside the project environment (scripts/env.sh), e.g.
#     scripts/run_in_env.sh python -c 'import rclpy'
#     scripts/run_in_env.sh ghost-feedback --help
# Safe to call from another venv's Python: the ROS wheels' bootstrap marker and LD_LIBRARY_PATH
# inherited from the caller are dropped before the environment is set up again.
set -euo pipefail
if (($# == 0)); then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi
unset _ROS_WHEELS_BOOTSTRAP_COMPLETE LD_LIBRARY_PATH
# shellcheck disable=SC1091
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"
exec "$@"
