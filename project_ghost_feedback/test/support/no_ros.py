# SPDX-License-Identifier: Apache-2.0
"""Packages made unimportable in a test's subprocess, to check that code runs without ROS."""

import sys

ROS_PACKAGES = ('rclpy', 'ament_index_python', 'project_ghost_feedback_msgs')
"""rclpy, the ament index and the project's message package."""


def block_imports(names):
    """Forget the top-level packages ``names`` in this process and refuse to import them again."""
    names = tuple(names)
    for name in list(sys.modules):
        if name.split('.')[0] in names:
            del sys.modules[name]

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split('.')[0] in names:
                raise ImportError('blocked ' + name)

    sys.meta_path.insert(0, Block())


def loaded(names):
    """Return the sorted modules of the packages ``names`` imported in this process."""
    return sorted(name for name in sys.modules if name.split('.')[0] in tuple(names))
