#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build a set of unmodified ROS 2 source tarballs (third_party/) with colcon on top of the project
# venv, cached outside the clone:
#
#     bash scripts/ros_sources.sh SET [--skip-if-found PKG] TARBALL... [-- CMAKE_ARG...]
#
# - The cache key is the sha256 of: the set name, each tarball's sha256, the CMake arguments (and the
#   content of any file they name), requirements/jazzy.txt, the venv's Python version and
#   RECIPE_VERSION below (bump it when a change to this script changes what gets built). The build lives in ${XDG_CACHE_HOME:-$HOME/.cache}/project_ghost_feedback/ros_sources/
#   SET-KEY/{src,build,install,log}; a finished one has install/.ros_sources_complete, and a second
#   run (or another clone with the same sources and pins) only links it: seconds.
# - An interrupted build keeps its build/ folder: the next run resumes where colcon stopped (each
#   package's CMake build is incremental). build/ is deleted once the whole set is installed.
# - The clone links the install as .ros_sources/SET; scripts/env.sh sources every
#   .ros_sources/*/local_setup.bash after the project's own install.
# - --skip-if-found PKG: when a ROS install already on AMENT_PREFIX_PATH (a real ROS 2 Jazzy, sourced
#   before this runs) has PKG, nothing is built and that install is used.
# - In CMAKE_ARGs, @SRC@ stands for the folder the tarballs are unpacked in (each tarball unpacks
#   into its own top folder) and @ROOT@ for this repository.
# - Offline by design: FetchContent is FULLY_DISCONNECTED; a package that would download fails.
# Knobs: ROS_SOURCES_JOBS (make -jN, default 2), ROS_SOURCES_NICE (default 10).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RECIPE_VERSION=1

die() { printf '[ros_sources] ERROR: %s\n' "$*" >&2; exit 2; }
log() { printf '[ros_sources] %s\n' "$*"; }

(($# >= 2)) || die "usage: ros_sources.sh SET [--skip-if-found PKG] TARBALL... [-- CMAKE_ARG...]"
SET="$1"; shift
[[ "${SET}" =~ ^[A-Za-z0-9_]+$ ]] || die "set name '${SET}': letters, digits and _ only"
SKIP_IF_FOUND=""
if [[ "${1:-}" == --skip-if-found ]]; then
  SKIP_IF_FOUND="${2:?--skip-if-found needs a package name}"; shift 2
fi
TARBALLS=()
while (($#)) && [[ "$1" != -- ]]; do TARBALLS+=("$(realpath "$1")"); shift; done
[[ "${1:-}" == -- ]] && shift
CMAKE_ARGS_RAW=("$@")
((${#TARBALLS[@]})) || die "set '${SET}': no tarballs given"

# --- a ROS install that already has the set ------------------------------------------------------
if [[ -n "${SKIP_IF_FOUND}" ]]; then
  IFS=: read -r -a prefixes <<<"${AMENT_PREFIX_PATH:-}"
  for prefix in "${prefixes[@]}"; do
    [[ -n "${prefix}" && "${prefix}" != "${ROOT}"/* ]] || continue
    if [[ -f "${prefix}/share/${SKIP_IF_FOUND}/package.xml" ]]; then
      log "${SET}: ${SKIP_IF_FOUND} found in ${prefix} (ROS install): nothing to build"
      rm -f "${ROOT}/.ros_sources/${SET}"
      exit 0
    fi
  done
fi

VENV="${ROOT}/.venv"
[[ -x "${VENV}/bin/python" ]] || die "no ${VENV}: run 'make setup' first"
for tool in cmake g++ make; do
  command -v "${tool}" >/dev/null || die "'${tool}' not found: apt-get install -y cmake g++ make"
done
for tarball in "${TARBALLS[@]}"; do
  [[ -f "${tarball}" ]] || die "${tarball}: no such tarball"
done

# --- cache key ----------------------------------------------------------------------------------
key_input() {
  echo "set ${SET}"
  for tarball in "${TARBALLS[@]}"; do
    echo "tarball $(basename "${tarball}") $(sha256sum <"${tarball}" | cut -d' ' -f1)"
  done
  local arg value
  for arg in "${CMAKE_ARGS_RAW[@]}"; do
    echo "cmake-arg ${arg}"
    value="${arg#*=}"
    value="${value//@ROOT@/${ROOT}}"
    [[ "${value}" == "${ROOT}"/* && -f "${value}" ]] && echo "file $(sha256sum <"${value}" | cut -d' ' -f1)"
  done
  echo "requirements $(sha256sum <"${ROOT}/requirements/jazzy.txt" | cut -d' ' -f1)"
  echo "python $("${VENV}/bin/python" -c 'import sys; print(sys.version)')"
  echo "build recipe ${RECIPE_VERSION}"
}
KEY="$(key_input | sha256sum | cut -c1-16)"
CACHE_BASE="${XDG_CACHE_HOME:-${HOME}/.cache}/project_ghost_feedback/ros_sources"
DIR="${CACHE_BASE}/${SET}-${KEY}"
STAMP="${DIR}/install/.ros_sources_complete"

link_install() {
  mkdir -p "${ROOT}/.ros_sources"
  ln -sfn "${DIR}/install" "${ROOT}/.ros_sources/${SET}"
}

if [[ -f "${STAMP}" ]]; then
  link_install
  log "${SET}: cached build ${DIR} ($(cat "${STAMP}")); linked as .ros_sources/${SET}"
  exit 0
fi

mkdir -p "${DIR}"
# One build per key at a time (two clones on one machine share the cache).
exec {lock_fd}>"${DIR}.lock"
if ! flock -n "${lock_fd}"; then
  log "${SET}: another process is building ${DIR}; waiting for it"
  flock "${lock_fd}"
fi
if [[ -f "${STAMP}" ]]; then
  link_install
  log "${SET}: cached build ${DIR}; linked as .ros_sources/${SET}"
  exit 0
fi

# --- sources ------------------------------------------------------------------------------------
mkdir -p "${DIR}/src"
for tarball in "${TARBALLS[@]}"; do
  name="$(basename "${tarball}")"
  [[ -f "${DIR}/src/.unpacked_${name}" ]] && continue
  tar -xzf "${tarball}" -C "${DIR}/src"
  touch "${DIR}/src/.unpacked_${name}"
done

CMAKE_ARGS=()
for arg in "${CMAKE_ARGS_RAW[@]}"; do
  arg="${arg//@SRC@/${DIR}/src}"
  CMAKE_ARGS+=("${arg//@ROOT@/${ROOT}}")
done

# --- build --------------------------------------------------------------------------------------
unset _ROS_WHEELS_BOOTSTRAP_COMPLETE
set +u
# shellcheck disable=SC1091
source "${VENV}/bin/activate"
set -u
export AMENT_PREFIX_PATH="${VIRTUAL_ENV}"
export CMAKE_PREFIX_PATH="${VIRTUAL_ENV}"
export COLCON_HOME="${DIR}/colcon_home"
mkdir -p "${COLCON_HOME}" "${DIR}/log"
packages="$(find "${DIR}/src" -name package.xml -not -path '*/test/*' | wc -l)"
log "${SET}: building ${packages} packages into ${DIR} (cold: long, see README; output in"
log "  ${DIR}/log/build_output.txt)"
start="${SECONDS}"
# colcon builds one package at a time here (no colcon-parallel-executor); make runs N jobs.
export MAKEFLAGS="-j${ROS_SOURCES_JOBS:-2}"
set +e
nice -n "${ROS_SOURCES_NICE:-10}" colcon --log-base "${DIR}/log" build \
  --merge-install \
  --base-paths "${DIR}/src" --build-base "${DIR}/build" --install-base "${DIR}/install" \
  --cmake-args -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
    -DPython3_EXECUTABLE="${VIRTUAL_ENV}/bin/python" -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
    "${CMAKE_ARGS[@]}" \
  >>"${DIR}/log/build_output.txt" 2>&1
rc=$?
set -e
elapsed=$((SECONDS - start))
if ((rc != 0)); then
  grep -E '^(Failed|Aborted|Finished) <<<|error:|Error|ERROR' "${DIR}/log/build_output.txt" | tail -40 >&2
  die "${SET}: colcon build failed after ${elapsed} s (exit ${rc}); full output: ${DIR}/log/build_output.txt; a re-run resumes"
fi
disk_with_build="$(du -sm "${DIR}" | cut -f1)"
rm -rf "${DIR}/build"
disk="$(du -sm "${DIR}" | cut -f1)"
echo "built in ${elapsed} s this run; ${disk} MB (${disk_with_build} MB with build/)" >"${STAMP}"
link_install
log "${SET}: done in ${elapsed} s; ${disk} MB installed (${disk_with_build} MB while building); linked as .ros_sources/${SET}"
