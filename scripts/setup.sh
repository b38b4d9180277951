#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# One setup step, idempotent: check build tools, create the project venv (.venv) with ROS 2 Jazzy
# from PyPI wheels (pins: requirements/jazzy.txt), fix the wheels' CMake paths, colcon-build both
# packages into build/ install/ log/ at the repository root. A second run only re-checks and runs a
# no-op colcon build.
#
# Environment knobs: PYTHON (interpreter for a new venv, must be CPython 3.11: the wheels are cp311),
# GHOST_FEEDBACK_SKIP_APT=1 (never call apt-get).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

VENV="${ROOT}/.venv"
REQUIREMENTS="${ROOT}/requirements/jazzy.txt"
# Test-only pins (pytest-xdist): outside jazzy.txt, which keys the ROS source builds' cache.
TEST_REQUIREMENTS="${ROOT}/requirements/test.txt"
STAMP="${VENV}/.ghost_feedback_requirements.sha256"
CMAKE_FIX_STAMP="${VENV}/.ghost_feedback_cmake_paths_fixed_3"

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

can_apt() {
  [[ "${GHOST_FEEDBACK_SKIP_APT:-0}" != 1 && "$(id -u)" == 0 ]] && command -v apt-get >/dev/null
}

APT_UPDATED=0
apt_install() {
  # Best effort: returns non-zero when apt is unavailable or the install fails.
  can_apt || return 1
  if [[ "${APT_UPDATED}" == 0 ]]; then
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get update -qq >/dev/null 2>&1 || true
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq "$@" >/dev/null 2>&1
}

# The ROS wheels' .pth bootstrapper re-executes Python with its own LD_LIBRARY_PATH and marks
# that in the environment; an inherited marker from another venv would skip the re-exec.
unset _ROS_WHEELS_BOOTSTRAP_COMPLETE

# --- 1. build tools -------------------------------------------------------------------------
missing=()
for tool in cmake g++ make; do
  command -v "${tool}" >/dev/null || missing+=("${tool}")
done
if ((${#missing[@]})); then
  log "missing build tools: ${missing[*]}; trying apt-get"
  apt_install cmake g++ make || true
  for tool in "${missing[@]}"; do
    command -v "${tool}" >/dev/null \
      || die "'${tool}' not found. Install the build tools: apt-get install -y cmake g++ make"
  done
fi

# tcpdump is optional (test_containment.py captures packets with it); never fail on it.
if ! command -v tcpdump >/dev/null; then
  if apt_install tcpdump; then
    log 'installed tcpdump (for the DDS containment test)'
  else
    log 'tcpdump not available; the packet-capture containment test will be skipped'
  fi
fi

# --- 2. venv --------------------------------------------------------------------------------
if [[ ! -x "${VENV}/bin/python" ]]; then
  python_for_venv="${PYTHON:-}"
  if [[ -z "${python_for_venv}" ]]; then
    if command -v python3.11 >/dev/null; then python_for_venv=python3.11; else python_for_venv=python3; fi
  fi
  version="$("${python_for_venv}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  [[ "${version}" == 3.11 ]] \
    || die "${python_for_venv} is Python ${version}; the ROS 2 Jazzy wheels need CPython 3.11 (set PYTHON=...)"
  log "creating ${VENV} with ${python_for_venv} (${version})"
  "${python_for_venv}" -m venv "${VENV}"
  rm -f "${STAMP}" "${CMAKE_FIX_STAMP}"
fi
PY="${VENV}/bin/python"
# The venv holds ~90 ROS package.xml files (share/*/package.xml): keep colcon from crawling them
# when this repository sits in the src/ of a ROS workspace.
touch "${VENV}/COLCON_IGNORE"

# --- 3. pinned requirements, installed only when they changed ------------------------------------
want_hash="$(cat "${REQUIREMENTS}" "${TEST_REQUIREMENTS}" <("${PY}" -c 'import sys; print(sys.version)') \
  | sha256sum | cut -d' ' -f1)"
have_hash="$(cat "${STAMP}" 2>/dev/null || true)"
if [[ "${want_hash}" != "${have_hash}" ]]; then
  pip_start=${SECONDS}
  pinned="$(cat "${REQUIREMENTS}" "${TEST_REQUIREMENTS}" | grep -cE '^[A-Za-z0-9_.-]+==' || true)"
  log "installing ${pinned} pinned packages (${REQUIREMENTS#"${ROOT}"/}: ROS 2 Jazzy wheels, rosbags,"
  log "  mcap, dask, numpy, matplotlib, test tools); a first run downloads ~1 GB and takes minutes"
  # pip's machine-wide config (constraints, find-links, local indexes) stays in effect.
  pip_log="$(mktemp)"
  pip_status="$(mktemp)"
  # Progress: one line per package pip collects ("[setup] pip 12/189 rosbags"), then the install.
  { if "${PY}" -m pip install --progress-bar off --disable-pip-version-check \
        -r "${REQUIREMENTS}" -r "${TEST_REQUIREMENTS}" 2>&1; then status=0; else status=$?; fi
    echo "${status}" >"${pip_status}"
  } | tee "${pip_log}" | {
    seen=0 collected=0
    while IFS= read -r line; do
      case "${line}" in
        Requirement\ already\ satisfied:*)
          seen=$((seen + 1)) ;;
        Collecting\ *)
          seen=$((seen + 1)) collected=$((collected + 1))
          name="${line#Collecting }"
          log "pip ${seen}/${pinned} ${name%% *}" ;;
        Installing\ collected\ packages:*)
          log "pip: ${seen} of ${pinned} resolved, ${collected} to install; installing (the" \
            "longest step, no output)" ;;
      esac
    done
  }
  if [[ "$(cat "${pip_status}")" != 0 ]]; then
    grep -v 'is ignored: it is neither a file nor a directory' "${pip_log}" >&2 || true
    rm -f "${pip_log}" "${pip_status}"
    die 'pip install failed'
  fi
  rm -f "${pip_log}" "${pip_status}"
  log "pip: ${pinned} pinned packages installed ($((SECONDS - pip_start)) s)"
  rm -f "${CMAKE_FIX_STAMP}"
  echo "${want_hash}" >"${STAMP}"
else
  log 'requirements unchanged, skipping pip'
fi

# --- 4. cmake path fix (ROS_TOOLCHAIN.md) ------------------------------------------------------
# The wheels' exported *__rosidl_generator_py targets point at their build machine's Python
# (/opt/python/cp311-cp311/...). Rewrite those paths to this venv once, so CMakeLists files stay
# what a real ROS install uses. Idempotent: after the rewrite no file matches any more.
# Likewise fastrtps' exported link interface names its build machine's /usr/lib64/libtinyxml2.so
# (the wheel bundles its own tinyxml2, which libfastrtps.so needs by itself), and tracetools' names
# lttng-ust (bundled too, as liblttng-ust-<hash>.so, which libtracetools.so needs by itself): both
# dropped, so that C++ packages built on the wheels (make rosbag2: rclcpp, ...) link here.
if [[ ! -f "${CMAKE_FIX_STAMP}" ]]; then
  "${PY}" - "${VENV}" <<'PY'
import pathlib
import sys
import sysconfig

import numpy

venv = pathlib.Path(sys.argv[1])
replacements = {
    '/opt/python/cp311-cp311/include/python3.11': sysconfig.get_paths()['include'],
    '/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include': numpy.get_include(),
    '/usr/lib64/libtinyxml2.so;': '',
    'INTERFACE_LINK_LIBRARIES "lttng-ust;dl;': 'INTERFACE_LINK_LIBRARIES "dl;',
    'set(_exported_library_names "lttng-ust;dl")': 'set(_exported_library_names "dl")',
}
changed = 0
for path in (venv / 'share').rglob('*.cmake'):
    text = path.read_text(errors='surrogateescape')
    if not any(old in text for old in replacements):
        continue
    new = text
    for old, repl in replacements.items():
        new = new.replace(old, repl)
    if new != text:
        path.write_text(new, errors='surrogateescape')
        changed += 1
print(f'[setup] cmake path fix: rewrote {changed} file(s)')
PY
  touch "${CMAKE_FIX_STAMP}"
fi

# --- 4b. ROS 2 command-line tools for the integration tests (optional) ------------------------
# ../shared/ros2_jazzy_tools holds launch, launch_ros, ros2cli, rosidl_runtime_py (not on PyPI).
# Only test_ros2_cli.py uses them (it skips without them); build and demo never need them.
# install.sh keeps its own stamp in the venv, so a second run is a no-op.
TOOLS_DIR="${ROOT}/../shared/ros2_jazzy_tools"
TOOLS_LOG="${ROOT}/log/ros2_jazzy_tools_install.txt"
mkdir -p "${ROOT}/log"
if [[ -f "${TOOLS_DIR}/install.sh" ]]; then
  tools_start="${SECONDS}"
  # Its sources unpack and build under the venv (COLCON_IGNOREd), not in a stray /tmp directory.
  if bash "${TOOLS_DIR}/install.sh" "${VENV}" "${VENV}/ros2_jazzy_tools_build" \
      >"${TOOLS_LOG}" 2>&1; then
    log "ROS 2 CLI tools: $(tail -1 "${TOOLS_LOG}") ($((SECONDS - tools_start)) s)"
  else
    log "ROS 2 CLI tools: install FAILED (see ${TOOLS_LOG#"${ROOT}"/}); the ros2 CLI tests will skip"
  fi
else
  log "ROS 2 CLI tools: ${TOOLS_DIR} not found; the ros2 CLI tests will skip"
fi

# --- 4c. tf2 (the bridge's use_tf; not on PyPI) ------------------------------------------------
# third_party/tf2: unmodified ros2/geometry2 Jazzy sources (tf2, tf2_msgs, tf2_py, tf2_ros_py),
# built once per key into a cache outside the clone (scripts/ros_sources.sh); env.sh sources it.
# With a ROS 2 install that already has tf2 (e.g. /opt/ros/jazzy sourced) nothing is built.
# GHOST_FEEDBACK_SKIP_TF2=1 skips it (the bridge then runs without tf; its tf tests skip).
system_tf2="$("${PY}" -c 'import os, tf2_ros; print(os.path.dirname(tf2_ros.__file__))' \
  2>/dev/null || true)"
if [[ "${GHOST_FEEDBACK_SKIP_TF2:-0}" == 1 ]]; then
  rm -f "${ROOT}/.ros_sources/tf2"
  log 'tf2: skipped (GHOST_FEEDBACK_SKIP_TF2=1); the bridge runs without tf'
elif [[ -n "${system_tf2}" && "${system_tf2}" != */project_ghost_feedback/ros_sources/* \
        && "${system_tf2}" != "${ROOT}"/.ros_sources/* ]]; then
  # (a tf2 importable from this project's own build, e.g. with env.sh sourced, is not a ROS install)
  rm -f "${ROOT}/.ros_sources/tf2"
  log "tf2: using the ROS 2 install's (${system_tf2})"
else
  tf2_start=${SECONDS}
  bash "${ROOT}/scripts/ros_sources.sh" tf2 --skip-if-found tf2_ros \
    "${ROOT}"/third_party/tf2/*.tar.gz >/dev/null \
    || die 'tf2 build failed (above); GHOST_FEEDBACK_SKIP_TF2=1 skips it'
  log "tf2 ready ($((SECONDS - tf2_start)) s)"
fi

# --- 4d. px4_msgs' aid-source types (the innovation bridge's px4_aid_topics) -------------------
# third_party/px4_msgs: PX4's unmodified package.xml, CMakeLists.txt and the three
# EstimatorAidSource .msg files (UPSTREAM.md), built as package px4_msgs once per content into the
# cache outside the clone, like tf2 (seconds when cached). With a ROS 2 workspace that already
# has px4_msgs sourced (the one matching your PX4), that one is used and nothing is built.
px4_start=${SECONDS}
bash "${ROOT}/scripts/ros_sources.sh" px4_msgs --skip-if-found px4_msgs \
  "${ROOT}/third_party/px4_msgs" >/dev/null \
  || die 'px4_msgs build failed (above)'
log "px4_msgs ready ($((SECONDS - px4_start)) s)"

# --- 5. colcon build ----------------------------------------------------------------------------
# shellcheck disable=SC1091
source "${VENV}/bin/activate"
export AMENT_PREFIX_PATH="${VIRTUAL_ENV}"
export CMAKE_PREFIX_PATH="${VIRTUAL_ENV}"
export COLCON_HOME="${ROOT}/.venv/colcon_home"
mkdir -p "${COLCON_HOME}"
mkdir -p "${ROOT}/log"
log 'colcon build --symlink-install'
set +e
colcon --log-base "${ROOT}/log" build \
  --symlink-install \
  --base-paths "${ROOT}/project_ghost_feedback_msgs" "${ROOT}/project_ghost_feedback" \
  --build-base "${ROOT}/build" --install-base "${ROOT}/install" \
  --cmake-args -DPython3_EXECUTABLE="${VIRTUAL_ENV}/bin/python" -DBUILD_TESTING=OFF \
  >"${ROOT}/log/colcon_build_output.txt" 2>&1
rc=$?
set -e
if ((rc != 0)); then
  cat "${ROOT}/log/colcon_build_output.txt" >&2
  printf '\n[setup] ERROR: colcon build FAILED (exit %d); full output above and in log/\n' "${rc}" >&2
  exit "${rc}"
fi
log "colcon build OK ($(grep -c '^Finished <<<' "${ROOT}/log/colcon_build_output.txt") packages)"
log 'done. Use it with: source scripts/env.sh'
