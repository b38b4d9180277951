# SPDX-License-Identifier: Apache-2.0
"""Offline evaluation of ordinary bags (``ghost-feedback evaluate``; docs/evaluate.md).

- :mod:`.inputs`: an estimate and a reference topic of any rosbag2 bag through the bridge's own
  engine (:class:`~..bridge.pairing.PairingEngine`) -> outcomes and assessments.
- :mod:`.command`: those through the feedback loop, recorded, summarised and drawn.
"""
