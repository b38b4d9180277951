#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Resolve every rosdep key of both packages with the real rosdep, offline, against a local
# checkout of ros/rosdistro (rosdep/base.yaml, rosdep/python.yaml, jazzy/distribution.yaml).
#
#   scripts/rosdep_check.sh ROSDISTRO_DIR [OS:VERSION ...]     (default: ubuntu:noble)
#
# rosdep comes from PyPI into a scratch venv (out/rosdep/venv); its cache and sources list stay
# under out/rosdep, so nothing of the user's rosdep setup is read or changed. Prints KEY -> package
# per OS and exits 1 if a key does not resolve. Not part of `make test`: CI has no rosdistro copy.
set -euo pipefail

if [[ $# -lt 1 || ! -f "$1/rosdep/base.yaml" || ! -f "$1/jazzy/distribution.yaml" ]]; then
    echo "usage: $0 ROSDISTRO_DIR [OS:VERSION ...]  (a ros/rosdistro checkout)" >&2
    exit 2
fi
ROSDISTRO=$(cd "$1" && pwd)
shift
PLATFORMS=("${@:-ubuntu:noble}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK="$ROOT/out/rosdep"
mkdir -p "$WORK/sources.list.d" "$WORK/home"

if [[ ! -x "$WORK/venv/bin/rosdep" ]]; then
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install -q 'rosdep==0.27.0'
fi
cat > "$WORK/sources.list.d/20-default.list" <<EOF
yaml file://$ROSDISTRO/rosdep/base.yaml
yaml file://$ROSDISTRO/rosdep/python.yaml
EOF
# An index with Jazzy only and no distribution_cache (the cache would be downloaded).
cat > "$WORK/index-v4.yaml" <<EOF
%YAML 1.1
---
distributions:
  jazzy:
    distribution: [file://$ROSDISTRO/jazzy/distribution.yaml]
    distribution_status: active
    distribution_type: ros2
    python_version: 3
type: index
version: 4
EOF
export ROSDEP_SOURCE_PATH="$WORK/sources.list.d" ROS_HOME="$WORK/home" ROS_DISTRO=jazzy
export ROSDISTRO_INDEX_URL="file://$WORK/index-v4.yaml"
ROSDEP="$WORK/venv/bin/rosdep"
"$ROSDEP" update --rosdistro jazzy >/dev/null 2>&1 || { "$ROSDEP" update --rosdistro jazzy; exit 1; }

mapfile -t KEYS < <("$ROSDEP" keys --from-paths "$ROOT/project_ghost_feedback" \
    "$ROOT/project_ghost_feedback_msgs" --ignore-src | sort -u)
echo "rosdistro $(git -C "$ROSDISTRO" rev-parse --short HEAD 2>/dev/null || echo '(not a git checkout)'): ${#KEYS[@]} keys"
failed=0
for platform in "${PLATFORMS[@]}"; do
    echo "== $platform"
    for key in "${KEYS[@]}"; do
        if resolved=$("$ROSDEP" resolve "$key" --os="$platform" --rosdistro jazzy 2>/dev/null); then
            echo "  $key -> $(grep -v '^#' <<<"$resolved" | tr '\n' ' ')"
        else
            echo "  $key -> NOT RESOLVED"
            failed=1
        fi
    done
done
exit $failed
