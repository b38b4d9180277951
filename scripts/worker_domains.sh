# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# One ROS domain per pytest-xdist worker, for `make test`. Source it after scripts/env.sh:
#     source scripts/env.sh && source scripts/worker_domains.sh 2
# The first worker's domain is this shell's ROS_DOMAIN_ID; every further one is a free id that
# env.sh picks and locks (the lock descriptors stay open for the life of this shell, like env.sh's
# own). Exports GHOST_FEEDBACK_WORKER_DOMAINS="A,B,..." (distinct ids; the test suite's
# conftest.py gives worker gwN the N-th) and GHOST_FEEDBACK_WORKERS (how many it holds: fewer than
# asked only when env.sh cannot lock a domain, no flock or no lock folder of this user's).
# This shell's ROS_DOMAIN_ID, GHOST_FEEDBACK_DOMAIN_LOCK_FD and environment stay as they were.

_ghost_feedback_wanted="${1:-2}"
_ghost_feedback_domains="${ROS_DOMAIN_ID:?source scripts/env.sh first}"
_ghost_feedback_count=1
_ghost_feedback_saved_domain="${ROS_DOMAIN_ID}"
_ghost_feedback_saved_fd="${GHOST_FEEDBACK_DOMAIN_LOCK_FD-}"
_ghost_feedback_saved_ament="${AMENT_PREFIX_PATH-}"
_ghost_feedback_saved_ps1="${PS1-}"
# Each further env.sh holds its pick, so the next pick differs; a domain already in the list (the
# first one, exported by hand and not locked) is skipped. Bounded: without locks env.sh returns
# the same PID-derived id every time.
for ((_ghost_feedback_try = 0; _ghost_feedback_try < 2 * _ghost_feedback_wanted; _ghost_feedback_try++)); do
  ((_ghost_feedback_count < _ghost_feedback_wanted)) || break
  unset ROS_DOMAIN_ID GHOST_FEEDBACK_DOMAIN_LOCK_FD
  # shellcheck disable=SC1091
  source "$(dirname "${BASH_SOURCE[0]}")/env.sh" || break
  [[ -n "${GHOST_FEEDBACK_DOMAIN_LOCK_FD-}" ]] || break   # no lock: not a domain of its own
  if [[ ",${_ghost_feedback_domains}," != *",${ROS_DOMAIN_ID},"* ]]; then
    _ghost_feedback_domains+=",${ROS_DOMAIN_ID}"
    _ghost_feedback_count=$((_ghost_feedback_count + 1))
  fi
done
# env.sh again appended the venv to AMENT_PREFIX_PATH and its activate script to PS1: restore.
export ROS_DOMAIN_ID="${_ghost_feedback_saved_domain}"
export AMENT_PREFIX_PATH="${_ghost_feedback_saved_ament}"
PS1="${_ghost_feedback_saved_ps1}"
if [[ -n "${_ghost_feedback_saved_fd}" ]]; then
  export GHOST_FEEDBACK_DOMAIN_LOCK_FD="${_ghost_feedback_saved_fd}"
else
  unset GHOST_FEEDBACK_DOMAIN_LOCK_FD
fi
export GHOST_FEEDBACK_WORKER_DOMAINS="${_ghost_feedback_domains}"
export GHOST_FEEDBACK_WORKERS="${_ghost_feedback_count}"
unset _ghost_feedback_wanted _ghost_feedback_domains _ghost_feedback_count _ghost_feedback_try \
  _ghost_feedback_saved_domain _ghost_feedback_saved_fd _ghost_feedback_saved_ament \
  _ghost_feedback_saved_ps1
