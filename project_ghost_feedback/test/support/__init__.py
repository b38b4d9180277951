# SPDX-License-Identifier: Apache-2.0
"""Shared test harnesses and builders: test modules import these, never each other."""
