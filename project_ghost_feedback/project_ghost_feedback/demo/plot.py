# SPDX-License-Identifier: Apache-2.0
"""The demo's PNG: Mahalanobis distance per outcome, and raw vs calibrated level over sim time."""

from ..core import NS_PER_S


def write_plot(path, scenario, steps, calibrated_by_stamp, title):
    """Write the two-panel figure to ``path`` (PNG) with matplotlib's Agg backend."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    times, position, orientation = [], [], []
    for step in steps:
        for outcome in step.outcomes:
            times.append(outcome.observed_stamp_sim_ns / NS_PER_S)
            position.append(outcome.position_mahalanobis)
            orientation.append(outcome.orientation_mahalanobis)
    stamps = sorted(calibrated_by_stamp)
    t_levels = [s / NS_PER_S for s in stamps]
    # The raw line is lifted a little so that it stays visible where both levels agree.
    raw = [calibrated_by_stamp[s].raw_assessment.overall_level.confidence_rank + 0.04
           for s in stamps]
    adjusted = [calibrated_by_stamp[s].adjusted_overall_level.confidence_rank for s in stamps]

    figure, (top, bottom) = pyplot.subplots(
        2, 1, sharex=True, figsize=(11, 7), gridspec_kw={'height_ratios': [3, 2]})
    colors = ('#e8f4e8', '#fbe3e3', '#e8eefa', '#f5f0e1')
    for index, span in enumerate(scenario.spans):
        for axis in (top, bottom):
            axis.axvspan(span.start_ns / NS_PER_S, span.end_ns / NS_PER_S,
                         color=colors[index % len(colors)], zorder=0)
        top.text((span.start_ns + span.end_ns) / (2 * NS_PER_S), 1.02, span.phase.name,
                 transform=top.get_xaxis_transform(), ha='center', va='bottom', fontsize=9)
    clip = 1e4  # +inf is drawn at the top of the axis
    top.scatter(times, [min(d, clip) for d in position], s=6, label='position d', zorder=2)
    top.scatter(times, [min(d, clip) for d in orientation], s=6, label='orientation d',
                zorder=2)
    for level, style in ((1, ':'), (3, '--'), (5, '-')):
        top.axhline(level, color='black', linestyle=style, linewidth=0.8, zorder=1)
        top.text(1.0, level, f' {level} std', transform=top.get_yaxis_transform(),
                 va='center', fontsize=8)
    top.set_yscale('log')
    top.set_ylabel('unsquared Mahalanobis d')
    top.legend(loc='upper left', fontsize=8)
    top.set_title(title, pad=18)

    bottom.step(t_levels, raw, where='post', label='raw (claimed)', linewidth=2)
    bottom.step(t_levels, adjusted, where='post', label='calibrated', linewidth=2)
    bottom.set_yticks([0, 1, 2], ['UNKNOWN', 'UNCERTAIN', 'KNOWN'])
    bottom.set_ylim(-0.3, 2.3)
    bottom.set_xlabel('sim time (s)')
    bottom.set_ylabel('overall level')
    bottom.legend(loc='lower left', fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
