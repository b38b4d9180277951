# SPDX-License-Identifier: Apache-2.0
"""Pure (numpy, no ROS) parts of the outcome bridge: pose errors, reference buffer, claims, pacing.

See docs/bridge.md for the math and the conventions.
"""
