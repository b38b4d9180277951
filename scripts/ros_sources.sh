#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build a set of unmodified ROS 2 Jazzy source packages with colcon on top of the project venv,
# into a cache keyed by what the build depends on, and register it for scripts/env.sh:
#
#   bash scripts/ros_sources.sh SET TARBALL...
#
# SET names the set (e.g. tf2); each TARBALL holds package folders (any depth: colcon finds
# every package.xml in it). The key is the sha256 of: the tarballs' sha256 sums, the pinned
# requirements (requirements/jazzy.txt, or ROS_SOURCES_REQUIREMENTS), the venv's Python version
# and FORMAT below. The install space is
#   ${GHOST_FEEDBACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/project_ghost_feedback}/ros_sources/SET-KEY/install
# outside the clone, so a fresh clone with the same sources reuses it (a second run: seconds).
# On success the install path is written to VENV/ros_sources.d/SET (env.sh sources the
# local_setup.bash of every path listed there) and printed on stdout; progress goes to stderr.
# Concurrent runs for one key wait on a lock; a build that did not finish is redone.
#
# Knobs: VENV (default: the repository's .venv), ROS_SOURCES_COLCON_ARGS (extra arguments for
# `colcon build`, e.g. --packages-up-to NAME), GHOST_FEEDBACK_CACHE (the cache root),
# ROS_SOURCES_REGISTER=0 (build only: leave VENV/ros_sources.d alone, as bench/ does).
# Needs cmake, make, g++ (setup.sh checks them).
set -euo pipefail

FORMAT=1  # bump when the build below changes in a way that changes the result
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-${ROOT}/.venv}"
REQUIREMENTS="${ROS_SOURCES_REQUIREMENTS:-${ROOT}/requirements/jazzy.txt}"

log() { printf '[setup] ros_sources %s: %s\n' "${SET}" "$*" >&2; }
die() { printf '[setup] ERROR: ros_sources %s: %s\n' "${SET}" "$*" >&2; exit 1; }

SET="${1:-}"
[[ -n "${SET}" && "${SET}" =~ ^[A-Za-z0-9_.-]+$ ]] \
  || { echo 'usage: ros_sources.sh SET TARBALL... (SET: letters, digits, _ . -)' >&2; exit 2; }
shift
(($#)) || die 'no tarball given'
for tarball in "$@"; do
  [[ -f "${tarball}" ]] || die "${tarball}: no such file"
done
[[ -x "${VENV}/bin/python" ]] || die "${VENV}: no venv (run scripts/setup.sh)"

python_version="$("${VENV}/bin/python" -c 'import sys; print(sys.version)')"
key="$( { printf 'format %s\n' "${FORMAT}"; sha256sum "$@" | cut -d' ' -f1
          sha256sum <"${REQUIREMENTS}" | cut -d' ' -f1; printf '%s\n' "${python_version}"; } \
        | sha256sum | cut -c1-16)"
cache_root="${GHOST_FEEDBACK_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/project_ghost_feedback}"
dir="${cache_root}/ros_sources/${SET}-${key}"
install="${dir}/install"
mkdir -p "${dir}"

register() {
  if [[ "${ROS_SOURCES_REGISTER:-1}" == 1 ]]; then
    mkdir -p "${VENV}/ros_sources.d"
    printf '%s\n' "${install}" >"${VENV}/ros_sources.d/${SET}"
  fi
  printf '%s\n' "${install}"
}

# One build per key at a time; a second clone waits and then finds it done.
exec {lock_fd}>"${dir}/.lock"
flock "${lock_fd}"
if [[ -f "${dir}/.complete" && -f "${install}/local_setup.bash" ]]; then
  log "cached (${dir})"
  register
  exit 0
fi

start=${SECONDS}
rm -rf "${dir}/src" "${dir}/build" "${dir}/install" "${dir}/log"
mkdir -p "${dir}/src"
for tarball in "$@"; do
  tar -xzf "${tarball}" -C "${dir}/src"
done
packages="$(find "${dir}/src" -name package.xml | wc -l)"
log "building ${packages} packages into ${dir} (once per key; log: ${dir}/build_output.txt)"

set +u
unset _ROS_WHEELS_BOOTSTRAP_COMPLETE
# shellcheck disable=SC1091
source "${VENV}/bin/activate"
set -u
export AMENT_PREFIX_PATH="${VIRTUAL_ENV}" CMAKE_PREFIX_PATH="${VIRTUAL_ENV}"
export COLCON_HOME="${dir}/colcon_home"
export MAKEFLAGS="${MAKEFLAGS:--j2}"
mkdir -p "${COLCON_HOME}"
# shellcheck disable=SC2086 # ROS_SOURCES_COLCON_ARGS is a list of words on purpose
if ! colcon --log-base "${dir}/log" build \
    --base-paths "${dir}/src" --build-base "${dir}/build" --install-base "${install}" \
    --executor sequential ${ROS_SOURCES_COLCON_ARGS:-} \
    --cmake-args -DPython3_EXECUTABLE="${VIRTUAL_ENV}/bin/python" -DBUILD_TESTING=OFF \
      -DCMAKE_BUILD_TYPE=Release \
    >"${dir}/build_output.txt" 2>&1; then
  tail -40 "${dir}/build_output.txt" >&2
  die "colcon build FAILED; full output: ${dir}/build_output.txt"
fi
# Keep the install space only (the sources are the tarballs, the build tree is large).
rm -rf "${dir}/src" "${dir}/build" "${dir}/colcon_home" "${dir}/log"
touch "${dir}/.complete"
log "built in $((SECONDS - start)) s, $(du -sh "${dir}" | cut -f1) on disk"
register
