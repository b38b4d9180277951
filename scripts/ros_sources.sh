#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Build a set of unmodified ROS 2 source tarballs (third_party/) with colcon on top of the project
# venv, cached outside the clone:
#
#     bash scripts/ros_sources.sh SET [--skip-if-found PKG] [--apt 'DEB...'] \
#         TARBALL... [--then TARBALL...]... [-- CMAKE_ARG...]
#
# - A TARBALL may also be a FOLDER of unmodified files that is itself one package (a package.xml
#   at its top, e.g. third_party/px4_msgs): it is copied into src/ under its own name, and the key
#   takes the sha256 of every file in it (names and contents) in place of a tarball's sha256.
# - Stages: the tarballs before the first --then are built (colcon build) first, then those up to
#   the next --then on top of them, and so on: for a package that a later one finds with
#   find_package but does not name in its package.xml (e.g. yaml-cpp for yaml_cpp_vendor).
# - The cache key is the sha256 of: the set name, each tarball's sha256 and stage, the CMake
#   arguments (and the content of any file they name), requirements/jazzy.txt, the venv's Python
#   version and RECIPE_VERSION below (bump it when a change to this script changes what gets
#   built). The build lives in
#   ${XDG_CACHE_HOME:-$HOME/.cache}/project_ghost_feedback/ros_sources/SET-KEY/{src,build,install,log};
#   a finished one has install/.ros_sources_complete, and a second run (or another clone with the
#   same sources and pins) only links it: seconds.
# - An interrupted build keeps its build/ folder: the next run resumes where colcon stopped (each
#   package's CMake build is incremental). build/ is deleted once the whole set is installed.
# - The clone links the install as .ros_sources/SET; scripts/env.sh sources every
#   .ros_sources/*/local_setup.bash after the project's own install.
# - --skip-if-found PKG: when a ROS install already on AMENT_PREFIX_PATH (a real ROS 2 Jazzy, sourced
#   before this runs) has PKG, nothing is built and that install is used.
# - --apt 'DEB...': Debian packages the set builds against (e.g. libtinyxml2-dev); the missing ones
#   are installed with apt-get when running as root (GHOST_FEEDBACK_SKIP_APT=1: never), otherwise
#   the build stops with the apt-get command to run.
# - In CMAKE_ARGs, @SRC@ stands for the folder the tarballs are unpacked in (each tarball unpacks
#   into its own top folder) and @ROOT@ for this repository.
# - Offline by design: FetchContent is FULLY_DISCONNECTED; a package that would download fails.
# - PyPI's pybind11 (the pybind11_vendor wheel's) is put on CMAKE_PREFIX_PATH when the venv has it.
# Knobs: ROS_SOURCES_LINK_DIR (where the install is linked; default .ros_sources/ of this clone,
# which scripts/env.sh reads), ROS_SOURCES_PRINT_DIR=1 (print the cache folder and exit),
# ROS_SOURCES_JOBS (make -jN, default 4: colcon builds one package at a time here, no
# colcon-parallel-executor, so this stands for --parallel-workers 2 with make -j2 each),
# ROS_SOURCES_NICE (default 10).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RECIPE_VERSION=1

die() { printf '[ros_sources] ERROR: %s\n' "$*" >&2; exit 2; }
log() { printf '[ros_sources] %s\n' "$*"; }

(($# >= 2)) || die "usage: ros_sources.sh SET [--skip-if-found PKG] [--apt 'DEB...'] TARBALL... [--then TARBALL...]... [-- CMAKE_ARG...]"
SET="$1"; shift
[[ "${SET}" =~ ^[A-Za-z0-9_]+$ ]] || die "set name '${SET}': letters, digits and _ only"
SKIP_IF_FOUND=""
if [[ "${1:-}" == --skip-if-found ]]; then
  SKIP_IF_FOUND="${2:?--skip-if-found needs a package name}"; shift 2
fi
APT_PACKAGES=()
if [[ "${1:-}" == --apt ]]; then
  read -r -a APT_PACKAGES <<<"${2:?--apt needs package names}"; shift 2
fi
TARBALLS=()
STAGE_OF=()  # stage number of each tarball
stage=0
while (($#)) && [[ "$1" != -- ]]; do
  if [[ "$1" == --then ]]; then
    stage=$((stage + 1))
  else
    TARBALLS+=("$(realpath "$1")")
    STAGE_OF+=("${stage}")
  fi
  shift
done
STAGES=$((stage + 1))
[[ "${1:-}" == -- ]] && shift
CMAKE_ARGS_RAW=("$@")
((${#TARBALLS[@]})) || die "set '${SET}': no tarballs given"

# --- a ROS install that already has the set ------------------------------------------------------
if [[ -n "${SKIP_IF_FOUND}" ]]; then
  IFS=: read -r -a prefixes <<<"${AMENT_PREFIX_PATH:-}"
  own_cache="${XDG_CACHE_HOME:-${HOME}/.cache}/project_ghost_feedback/ros_sources"
  for prefix in "${prefixes[@]}"; do
    # A set this script built (this clone's, or the cache's, sourced by scripts/env.sh) is not a
    # ROS install: finding it would unlink the set it is.
    [[ -n "${prefix}" && "${prefix}" != "${ROOT}"/* && "${prefix}" != "${own_cache}"/* ]] \
      || continue
    if [[ -f "${prefix}/share/${SKIP_IF_FOUND}/package.xml" ]]; then
      log "${SET}: ${SKIP_IF_FOUND} found in ${prefix} (ROS install): nothing to build"
      rm -f "${ROS_SOURCES_LINK_DIR:-${ROOT}/.ros_sources}/${SET}"
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
  [[ -f "${tarball}" || -d "${tarball}" ]] || die "${tarball}: no such tarball or folder"
done
missing_debs=()
for deb in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "${deb}" 2>/dev/null | grep -q 'install ok installed' \
    || missing_debs+=("${deb}")
done
if ((${#missing_debs[@]})); then
  if [[ "${GHOST_FEEDBACK_SKIP_APT:-0}" != 1 && "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    log "${SET}: apt-get install ${missing_debs[*]}"
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq "${missing_debs[@]}" >/dev/null \
      || die "${SET}: apt-get install ${missing_debs[*]} failed"
  else
    die "${SET} needs Debian packages: apt-get install -y ${missing_debs[*]}"
  fi
fi

# --- cache key ----------------------------------------------------------------------------------
folder_sha256() {  # one sha256 of every file's relative name and content under folder $1
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum) \
    | sha256sum | cut -d' ' -f1
}
key_input() {
  echo "set ${SET}"
  local i
  for i in "${!TARBALLS[@]}"; do
    if [[ -d "${TARBALLS[i]}" ]]; then
      echo "folder ${STAGE_OF[i]} $(basename "${TARBALLS[i]}") $(folder_sha256 "${TARBALLS[i]}")"
    else
      echo "tarball ${STAGE_OF[i]} $(basename "${TARBALLS[i]}") $(sha256sum <"${TARBALLS[i]}" | cut -d' ' -f1)"
    fi
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
if [[ "${ROS_SOURCES_PRINT_DIR:-0}" == 1 ]]; then
  echo "${DIR}"  # where this set's build is (or would be) cached; nothing else done
  exit 0
fi

LINK_DIR="${ROS_SOURCES_LINK_DIR:-${ROOT}/.ros_sources}"
link_install() {
  mkdir -p "${LINK_DIR}"
  ln -sfn "${DIR}/install" "${LINK_DIR}/${SET}"
}

# A cached set is linked (and so put on PYTHONPATH / LD_LIBRARY_PATH by env.sh) only if it is
# this user's own and complete: the cache folders, the set folder, its install/ and the stamp
# (written last, after a build that finished) owned by this user, none of them a symlink nor
# writable by group or others, the stamp not empty. The key is a hash of public inputs, so
# anyone could plant a folder under it; one that fails the check is refused, never used.
untrusted() {  # print why PATH is not this user's own, private folder or file; else nothing
  local path="$1"
  if [[ -L "${path}" ]]; then echo "${path} is a symlink"
  elif [[ ! -O "${path}" ]]; then echo "${path} is not owned by $(id -un)"
  elif [[ -n "$(find "${path}" -maxdepth 0 -perm /022 2>/dev/null)" ]]; then
    echo "${path} is writable by group or others"
  fi
}
cached_set_problem() {  # why the cached set at DIR may not be linked; nothing when it may
  local path why
  for path in "${CACHE_BASE}" "${DIR}" "${DIR}/install" "${STAMP}"; do
    why="$(untrusted "${path}")"
    [[ -z "${why}" ]] || { echo "${why}"; return; }
  done
  [[ -s "${STAMP}" ]] || echo "${STAMP} is empty (a build that did not finish)"
}
check_cached_set() {  # exit 1 with the reason when the cached set at DIR is not to be trusted
  local why
  why="$(cached_set_problem)"
  [[ -z "${why}" ]] || die "${SET}: refusing the cached build ${DIR}: ${why}; remove it (rm -rf \
${DIR}) to rebuild"
}

mkdir -p -m 700 "${CACHE_BASE}"
if [[ -f "${STAMP}" ]]; then
  check_cached_set
  link_install
  log "${SET}: cached build ${DIR} ($(cat "${STAMP}")); linked as .ros_sources/${SET}"
  exit 0
fi

mkdir -p "${DIR}"
why="$(untrusted "${DIR}")"
[[ -z "${why}" ]] || die "${SET}: refusing the cache folder ${DIR}: ${why}"
# One build per key at a time (two clones on one machine share the cache).
exec {lock_fd}>"${DIR}.lock"
if ! flock -n "${lock_fd}"; then
  log "${SET}: another process is building ${DIR}; waiting for it"
  flock "${lock_fd}"
fi
if [[ -f "${STAMP}" ]]; then
  check_cached_set
  link_install
  log "${SET}: cached build ${DIR}; linked as .ros_sources/${SET}"
  exit 0
fi

# --- sources ------------------------------------------------------------------------------------
mkdir -p "${DIR}/src"
TOPS=()  # the top folder of each tarball (or the folder's own name), in src/
for tarball in "${TARBALLS[@]}"; do
  name="$(basename "${tarball}")"
  if [[ -d "${tarball}" ]]; then
    TOPS+=("${name}")
    [[ -f "${DIR}/src/.unpacked_${name}" ]] && continue
    rm -rf "${DIR}/src/${name}"
    cp -R "${tarball}" "${DIR}/src/${name}"
    touch "${DIR}/src/.unpacked_${name}"
    continue
  fi
  top="$(tar -tzf "${tarball}" | sed -n 1p | cut -d/ -f1)"
  [[ -n "${top}" ]] || die "${tarball}: empty tarball"
  TOPS+=("${top}")
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
log "${SET}: building ${packages} packages into ${DIR} (cold: long, see docs/setup.md; output in"
log "  ${DIR}/log/build_output.txt)"
# PyPI's pybind11 (what the pybind11_vendor wheel uses) keeps its CMake config inside
# site-packages: put that prefix on CMAKE_PREFIX_PATH for find_package(pybind11).
PYBIND11_PREFIX="$(python -c 'import os, pybind11; print(os.path.dirname(pybind11.__file__))' \
  2>/dev/null || true)"
resumed=""
[[ -d "${DIR}/build" ]] && resumed=" (resumed an earlier, interrupted build: its time not counted)"
start="${SECONDS}"
# colcon builds one package at a time here (no colcon-parallel-executor); make runs N jobs.
export MAKEFLAGS="-j${ROS_SOURCES_JOBS:-4}"
# The wheels' libraries need libraries bundled beside them (libssl-<hash>.so, ...) and Python's
# symbols (resolved at run time: the interpreter, ros_wheels_bootstrapper's LD_LIBRARY_PATH), which
# the linker cannot see when it links an executable (rclcpp_components' component_container):
# leave those to run time, as for shared libraries.
export LDFLAGS="${LDFLAGS:+${LDFLAGS} }-Wl,--allow-shlib-undefined"
for ((stage = 0; stage < STAGES; stage++)); do
  paths=()
  for i in "${!TOPS[@]}"; do
    ((STAGE_OF[i] == stage)) && paths+=("${DIR}/src/${TOPS[i]}")
  done
  if [[ -f "${DIR}/install/local_setup.bash" ]]; then
    # What the earlier stages installed (a re-run: this stage's own packages too, harmless).
    set +u
    # shellcheck disable=SC1091
    COLCON_CURRENT_PREFIX="${DIR}/install" source "${DIR}/install/local_setup.bash"
    set -u
  fi
  export CMAKE_PREFIX_PATH="${DIR}/install:${VIRTUAL_ENV}${PYBIND11_PREFIX:+:${PYBIND11_PREFIX}}"
  log "${SET}: stage $((stage + 1))/${STAGES}: ${paths[*]##*/}"
  set +e
  nice -n "${ROS_SOURCES_NICE:-10}" colcon --log-base "${DIR}/log" build \
    --merge-install \
    --base-paths "${paths[@]}" --build-base "${DIR}/build" --install-base "${DIR}/install" \
    --cmake-args -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
      -DPython3_EXECUTABLE="${VIRTUAL_ENV}/bin/python" -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
      "${CMAKE_ARGS[@]}" \
    >>"${DIR}/log/build_output.txt" 2>&1
  rc=$?
  set -e
  if ((rc != 0)); then
    elapsed=$((SECONDS - start))
    grep -E '^(Failed|Aborted|Finished) <<<|error:|Error|ERROR' "${DIR}/log/build_output.txt" | tail -40 >&2
    die "${SET}: colcon build failed after ${elapsed} s (exit ${rc}); full output: ${DIR}/log/build_output.txt; a re-run resumes"
  fi
done
elapsed=$((SECONDS - start))
disk_with_build="$(du -sm "${DIR}" | cut -f1)"
rm -rf "${DIR}/build"
disk="$(du -sm "${DIR}" | cut -f1)"
echo "built in ${elapsed} s${resumed}; ${disk} MB (${disk_with_build} MB with build/)" >"${STAMP}"
link_install
log "${SET}: done in ${elapsed} s${resumed}; ${disk} MB installed (${disk_with_build} MB while building); linked as .ros_sources/${SET}"
