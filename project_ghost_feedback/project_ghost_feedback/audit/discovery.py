# SPDX-License-Identifier: Apache-2.0
"""Find telemetry bag directories under the paths given to ``ghost-feedback audit``.

A bag is a directory holding ``metadata.yaml`` or ``*.mcap`` files (the latter without
metadata.yaml is still returned, so the audit reports it as a failing bag with its reason).
Other directories are searched recursively, without following symbolic links and without
descending into a bag. Only names are looked at here: nothing is opened.
"""

from collections.abc import Iterable
import os
import re


def _is_bag_dir(path: str) -> bool:
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name == 'metadata.yaml' or entry.name.endswith('.mcap'):
                    return True
    except OSError:
        return False
    return False


def find_bags(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[str], list[str]]:
    """Return ``(bags, problems)``: bag directories in discovery order, and one-line problems.

    A path that is itself a bag is returned as is; a directory is searched (sorted, so the order
    is stable); a path that does not exist or holds no bag is a problem. Duplicates are dropped.
    """
    bags, problems, seen = list[str](), list[str](), set[str]()

    def add(path: str) -> None:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            bags.append(path)

    for path in paths:
        path = os.fspath(path)
        if not os.path.isdir(path):
            problems.append(f'{path}: not a directory' if os.path.exists(path)
                            else f'{path}: no such directory')
            continue
        if _is_bag_dir(path):
            add(path)
            continue
        found = 0
        for root, dirs, _ in os.walk(path):
            dirs.sort()
            keep = []
            for name in dirs:
                sub = os.path.join(root, name)
                if os.path.islink(sub):
                    continue
                if _is_bag_dir(sub):
                    add(sub)
                    found += 1
                else:
                    keep.append(name)
            dirs[:] = keep
        if not found:
            problems.append(f'{path}: no bag found (no directory holding metadata.yaml or *.mcap)')
    return bags, problems


ROBOT_NAME_MODES = ('auto', 'bag', 'parent')
_TIMESTAMPED_BAG = re.compile(
    r'^(rosbag2|ghost_feedback)_\d{4}_\d{2}_\d{2}-\d{2}_\d{2}_\d{2}(_\d+)?$')


def robot_name(bag: str | os.PathLike[str], mode: str = 'auto') -> str:
    """Return the robot a bag belongs to, from its folder structure.

    ``bag``: the bag folder's name. ``parent``: the folder holding it (``fleet/robot7/run_3``).
    ``auto``: the parent when the bag folder has a name rosbag2 or the feedback node generates
    (``rosbag2_2026_12_04-10_00_00``, ``ghost_feedback_...``: one folder per run under the
    robot's), else the bag folder's own name.
    """
    if mode not in ROBOT_NAME_MODES:
        raise ValueError(f'--robot-name-from must be one of {", ".join(ROBOT_NAME_MODES)}')
    path = os.path.normpath(os.fspath(bag))
    name = os.path.basename(path)
    parent = os.path.basename(os.path.dirname(path)) or name
    if mode == 'parent' or (mode == 'auto' and _TIMESTAMPED_BAG.match(name)):
        return parent
    return name
