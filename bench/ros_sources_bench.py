#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ROS sources bench: what building third_party/tf2 adds to setup (cold, cached) and its disk.

Runs ``scripts/ros_sources.sh tf2 third_party/tf2/*.tar.gz`` (the step setup.sh runs) twice into a
throw-away cache (``XDG_CACHE_HOME``; ``ROS_SOURCES_LINK_DIR`` a throw-away folder, so the
project's own ``.ros_sources/tf2`` link is left alone) on top of the project venv: once cold
(extract, colcon build of the four packages) and once cached, and prints the wall time of each, the
install space's size on disk and the machine's load. Figures only, never a gate: they move with the
load of the machine.

    python3 bench/ros_sources_bench.py
"""

import os
import pathlib
import shutil
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _size(path: str | pathlib.Path) -> int:
    return sum(f.stat().st_size for f in pathlib.Path(path).rglob('*') if f.is_file()
               and not f.is_symlink())


def main() -> int:
    """Build the tf2 set cold and cached; print the figures."""
    tarballs = sorted(str(p) for p in (ROOT / 'third_party' / 'tf2').glob('*.tar.gz'))
    cache = tempfile.mkdtemp(prefix='ros_sources_bench_')
    env = dict(os.environ, XDG_CACHE_HOME=cache, ROS_SOURCES_LINK_DIR=os.path.join(cache, 'links'))
    env.pop('_ROS_WHEELS_BOOTSTRAP_COMPLETE', None)
    command = ['bash', str(ROOT / 'scripts' / 'ros_sources.sh'), 'tf2', *tarballs]
    try:
        times: list[float] = []
        for _ in ('cold', 'cached'):
            start = time.monotonic()
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            times.append(time.monotonic() - start)
            if done.returncode != 0:
                print(done.stderr)
                return 1
        where = subprocess.run(command, env=dict(env, ROS_SOURCES_PRINT_DIR='1'),
                               capture_output=True, text=True, check=True)
        install = pathlib.Path(where.stdout.strip().splitlines()[-1]) / 'install'
        print(f'[ros_sources] load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
        print(f'[ros_sources] tf2 cold build: {times[0]:.0f} s; cached: {times[1]:.2f} s')
        print(f'[ros_sources] install space: {_size(install) / 1e6:.1f} MB '
              f'({_size(install.parent) / 1e6:.1f} MB with the build log), tarball '
              f'{sum(pathlib.Path(t).stat().st_size for t in tarballs) / 1e3:.0f} kB')
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
