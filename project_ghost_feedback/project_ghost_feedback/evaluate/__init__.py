# SPDX-License-Identifier: Apache-2.0
"""Offline evaluation of ordinary bags (``ghost-feedback evaluate``; docs/evaluate.md).

The inputs are read outside this package, by the modules the nodes' engines share:

- :mod:`..bridge_inputs`: an estimate and a reference topic of any rosbag2 bag through the
  bridge's own engine (:class:`~..bridge.pairing.PairingEngine`) -> outcomes and assessments;
- :mod:`..field_inputs`: a filter's innovations (``--innovation``; Innovation or PX4 aid-source
  topics) through the innovation bridge's engine, no ground truth.

:mod:`.command` runs those through the feedback loop, records, summarises and draws them.
"""
