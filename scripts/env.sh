# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# The one environment every project command runs in. Source it from bash:
#     source scripts/env.sh
# - activates the project venv (.venv) and the colcon workspace (install/setup.bash);
# - confines DDS to this machine: ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST plus the Fast DDS
#   profile config/fastdds_loopback.xml (SHM + UDPv4 on 127.0.0.1 only; FASTDDS_ and
#   FASTRTPS_DEFAULT_PROFILES_FILE), see docs/dds_containment.md;
# - keeps a ROS_DOMAIN_ID you already exported; otherwise picks a free one in 1..101 (held by a
#   lock file for the life of this shell) so concurrent runs on one machine do not cross-talk.
#   Export ROS_DOMAIN_ID yourself to let two shells talk to each other.
# Run `bash scripts/setup.sh` (or `make setup`) first.

_ghost_feedback_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [[ ! -f "${_ghost_feedback_root}/.venv/bin/activate" \
      || ! -f "${_ghost_feedback_root}/install/setup.bash" ]]; then
  echo "[env] ${_ghost_feedback_root}: not set up yet; run: bash scripts/setup.sh" >&2
  unset _ghost_feedback_root
  return 1 2>/dev/null || exit 1
fi

# A marker inherited from another venv's Python would make this venv's ROS wheels skip their
# LD_LIBRARY_PATH bootstrap (ROS_TOOLCHAIN.md): start clean.
unset _ROS_WHEELS_BOOTSTRAP_COMPLETE

# colcon's and the venv's scripts read unset variables: relax nounset while sourcing them.
_ghost_feedback_nounset=0
[[ $- == *u* ]] && _ghost_feedback_nounset=1
set +u
# shellcheck disable=SC1091
source "${_ghost_feedback_root}/.venv/bin/activate"
# shellcheck disable=SC1091
source "${_ghost_feedback_root}/install/setup.bash"
# ROS source sets built by scripts/ros_sources.sh into the cache outside the clone (tf2 by setup.sh,
# rosbag2 by make rosbag2): .ros_sources/<set> links to each set's cached install.
for _ghost_feedback_set in "${_ghost_feedback_root}"/.ros_sources/*/local_setup.bash; do
  [[ -f "${_ghost_feedback_set}" ]] || continue
  # The set may have been built by another clone: its scripts would run that clone's Python.
  # shellcheck disable=SC1090
  COLCON_PYTHON_EXECUTABLE="${VIRTUAL_ENV}/bin/python" source "${_ghost_feedback_set}"
done
unset _ghost_feedback_set
((_ghost_feedback_nounset)) && set -u
unset _ghost_feedback_nounset

export GHOST_FEEDBACK_ROOT="${_ghost_feedback_root}"
# Let ament_index find the ROS packages that live in the venv (rclpy, diagnostic_msgs, ...).
export AMENT_PREFIX_PATH="${AMENT_PREFIX_PATH:+${AMENT_PREFIX_PATH}:}${VIRTUAL_ENV}"
export RMW_IMPLEMENTATION=rmw_fastrtps_cpp
# A ROS install's setup.bash sets it; the venv holds Jazzy (rosbag2 writes it into every bag).
export ROS_DISTRO="${ROS_DISTRO:-jazzy}"
# The package's executables (feedback_node, ghost-feedback) on PATH; `ros2 run` is not available
# from PyPI, it would find them in the same folder.
export PATH="${_ghost_feedback_root}/install/project_ghost_feedback/lib/project_ghost_feedback:${PATH}"

# --- DDS containment ---------------------------------------------------------------------------
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
# Fast DDS 2.x (Jazzy) reads FASTRTPS_DEFAULT_PROFILES_FILE and ignores the FASTDDS_ name;
# Fast DDS 3.x (Kilted and later) reads FASTDDS_DEFAULT_PROFILES_FILE. Set both.
export FASTDDS_DEFAULT_PROFILES_FILE="${_ghost_feedback_root}/config/fastdds_loopback.xml"
export FASTRTPS_DEFAULT_PROFILES_FILE="${FASTDDS_DEFAULT_PROFILES_FILE}"
# Static peers would add unicast discovery to other hosts.
unset ROS_STATIC_PEERS

# --- ROS_DOMAIN_ID ------------------------------------------------------------------------------
# The locks live in a directory this user owns (never a world-writable one such as /tmp, where
# another user could plant a symlink named like a lock and have the open truncate its target):
# $XDG_RUNTIME_DIR when it is set and this user's, else ~/.cache/project_ghost_feedback/locks
# (mode 700). Domain ids are then held per user: another user's shells may pick the same id.
_ghost_feedback_lock_dir=""
if [[ -n "${XDG_RUNTIME_DIR:-}" && -d "${XDG_RUNTIME_DIR}" && ! -L "${XDG_RUNTIME_DIR}" \
      && -O "${XDG_RUNTIME_DIR}" ]]; then
  _ghost_feedback_lock_dir="${XDG_RUNTIME_DIR}/project_ghost_feedback"
elif [[ -n "${HOME:-}" ]]; then
  _ghost_feedback_lock_dir="${HOME}/.cache/project_ghost_feedback/locks"
fi
if [[ -n "${_ghost_feedback_lock_dir}" ]]; then
  { mkdir -p -m 700 "${_ghost_feedback_lock_dir}"; } 2>/dev/null
  if [[ ! -d "${_ghost_feedback_lock_dir}" || -L "${_ghost_feedback_lock_dir}" \
        || ! -O "${_ghost_feedback_lock_dir}" ]]; then
    _ghost_feedback_lock_dir=""   # not ours: no lock, a PID-derived id
  fi
fi
if [[ -z "${ROS_DOMAIN_ID:-}" ]]; then
  _ghost_feedback_offset=$(($$ % 101))
  for _ghost_feedback_i in $(seq 0 100); do
    _ghost_feedback_id=$(((_ghost_feedback_offset + _ghost_feedback_i) % 101 + 1))
    if ! command -v flock >/dev/null || [[ -z "${_ghost_feedback_lock_dir}" ]]; then
      break  # no flock or no directory of ours: a PID-derived id is the best we can do
    fi
    # The lock stays open for the life of this shell (and is inherited by what it starts: the
    # documented domain lock). Only the open itself is quiet: an `exec` without a command makes its
    # redirections permanent, so `exec {fd}>file 2>/dev/null` would silence this shell's stderr for
    # good. The braces scope the 2>/dev/null to the open alone.
    { exec {_ghost_feedback_lock_fd}>>"${_ghost_feedback_lock_dir}/ros_domain_${_ghost_feedback_id}.lock"; } \
      2>/dev/null || continue
    if flock -n "${_ghost_feedback_lock_fd}"; then
      export GHOST_FEEDBACK_DOMAIN_LOCK_FD="${_ghost_feedback_lock_fd}"
      break
    fi
    exec {_ghost_feedback_lock_fd}>&-
  done
  export ROS_DOMAIN_ID="${_ghost_feedback_id}"
  unset _ghost_feedback_offset _ghost_feedback_i _ghost_feedback_id _ghost_feedback_lock_fd
fi
unset _ghost_feedback_lock_dir

unset _ghost_feedback_root
