# SPDX-License-Identifier: Apache-2.0
"""ROS 2 layer: message <-> contract conversions and the nodes (imports rclpy)."""
