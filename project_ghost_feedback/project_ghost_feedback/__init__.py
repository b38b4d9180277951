# SPDX-License-Identifier: Apache-2.0
"""Closed-loop feedback on an estimator's self-assessment (ROS 2 package project_ghost_feedback)."""

__version__ = '0.6.0'
