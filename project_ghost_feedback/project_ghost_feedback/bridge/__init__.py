# SPDX-License-Identifier: Apache-2.0
"""The outcome bridge's engine, without rclpy.

Pairing, pose errors, reference buffer, claims, decorrelation, the /tf gate;
``tf2_transforms.py`` answers the engine's frame lookups from a tf2 ``BufferCore`` (tf2_py, the
one ROS library here: the node passes its tf2_ros Buffer, evaluate a BufferCore fed from a bag).

See docs/bridge.md for the math and the conventions.
"""
