# SPDX-License-Identifier: Apache-2.0
"""The project's pictures: one set of panels (matplotlib, Agg; plain functions on data).

Every picture the project draws is composed of these panels, so the same quantity looks the
same everywhere: ``ghost-feedback evaluate``'s ``evaluate.png`` (:func:`build_figure`,
:func:`write_picture`) and the demos' ``demo.png`` / ``stack_demo.png`` (``demo/``).

- :func:`distance_panel`: every outcome's unsquared Mahalanobis distance per vec3, with the
  quantiles of the chi distribution with 3 degrees of freedom a calibrated estimator's distances
  follow (:data:`QUANTILES`), named as such;
- :func:`level_panel`: the raw (claimed) and the calibrated level;
- :func:`k_panel`: the window estimate of ``k`` (true errors / claimed standard deviation) per
  vec3 with its 95% interval, and ``k = 1`` (honest);
- :func:`nees_panel`: the position NEES of the raw and of the calibrated estimate (only when a
  calibrated estimate exists: the bridge's ``calibrated_estimate.enabled``);
- :func:`shade_episodes` (downgrade episodes, in the colour of their level) and
  :func:`shade_phases` (a demo's scripted phases, named).

Times are in seconds (evaluate: from the bag start, :func:`~.core.feedback.episodes.time_origin`;
the demos: sim time). :func:`build_figure` returns the Figure (tests read its axes),
:func:`write_picture` / :func:`save` write and close one.
"""

from collections.abc import Iterable, Sequence
import math
import os
from typing import Any

from .core.feedback.chi_square import chi_square_quantile
from .core.feedback.overconfidence import DOF_PER_VEC3

DISTANCES_TITLE = 'unsquared Mahalanobis distance d per outcome'
LEVELS_TITLE = 'level: raw (claimed) vs calibrated'
K_TITLE = 'overconfidence k = true error / claimed std, window estimate with its 95% interval'
NEES_TITLE = 'position NEES of the raw and the calibrated estimate'
QUANTILES = (0.5, 0.95, 0.999)
"""Probabilities of the chi(3) quantile lines on the distance panel."""
EPISODE_COLORS = {'UNCERTAIN': '#ffb300', 'UNKNOWN': '#e53935'}
LEVEL_TICKS = ('UNKNOWN', 'UNCERTAIN', 'KNOWN')
_CLIP = 1e4  # +inf and huge values are drawn at the top


def _plain_log_ticks(axis: Any) -> None:
    """Label a log y axis at 0.5, 1, 2, 5, 10 ... in plain numbers instead of 5x10^-1.

    Ticks at 1, 2 and 5 of every decade, so an axis spanning less than a decade (k from 0.8 to
    3) still shows several labels, not "1" alone.
    """
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    axis.yaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    axis.yaxis.set_major_formatter(FormatStrFormatter('%g'))
    axis.yaxis.set_minor_formatter(NullFormatter())


def _clip(value: float) -> float:
    return min(value, _CLIP) if math.isfinite(value) else _CLIP


def chi3_quantile_lines() -> list[tuple[float, float]]:
    """Return ``[(probability, d), ...]``: the chi(3) quantiles of an unsquared distance."""
    return [(p, math.sqrt(chi_square_quantile(p, DOF_PER_VEC3))) for p in QUANTILES]


def shade_episodes(axes: Sequence[Any], episodes: Iterable[tuple[float, float, str]]) -> None:
    """Shade ``episodes`` (``(start_s, end_s, level name)``) on every axis of ``axes``."""
    for start, end, level in episodes:
        for axis in axes:
            axis.axvspan(start, max(end, start + 1e-3), color=EPISODE_COLORS.get(level, '#999'),
                         alpha=0.22, linewidth=0, zorder=0)


PHASE_COLORS = ('#e8f4e8', '#fbe3e3', '#e8eefa', '#f5f0e1')


def shade_phases(axes: Sequence[Any], spans: Iterable[tuple[str, float, float]]) -> None:
    """Shade and name a demo's phases (``(name, start_s, end_s)``) on every axis of ``axes``."""
    for index, (name, start, end) in enumerate(spans):
        for axis in axes:
            axis.axvspan(start, end, color=PHASE_COLORS[index % len(PHASE_COLORS)], zorder=0)
        # Inside the top panel, under its title: the title keeps the space above the axes.
        axes[0].text((start + end) / 2, 0.98, name, transform=axes[0].get_xaxis_transform(),
                     ha='center', va='top', fontsize=9, style='italic')


def figure(rows: int, height_ratios: Sequence[float], height: float) -> tuple[Any, Any]:
    """Return ``(Figure, axes)``: ``rows`` panels sharing the time axis (Agg backend)."""
    import matplotlib

    matplotlib.use('Agg')
    from matplotlib import pyplot

    return pyplot.subplots(rows, 1, sharex=True, figsize=(11, height),
                           gridspec_kw={'height_ratios': list(height_ratios)[:rows]})


def save(figure_: Any, path: str | os.PathLike[str]) -> None:
    """Write ``figure_`` to ``path`` (PNG) and close it."""
    from matplotlib import pyplot

    try:
        figure_.savefig(path, dpi=100)
    finally:
        pyplot.close(figure_)


def distance_panel(axis: Any, distances: Sequence[tuple[float, float, float]]) -> None:
    """Draw ``distances`` (``(t_s, position d, orientation d)``) and the chi(3) quantiles."""
    times = [t for t, _, _ in distances]
    axis.scatter(times, [_clip(p) for _, p, _ in distances], s=5, label='position d')
    axis.scatter(times, [_clip(o) for _, _, o in distances], s=5, label='orientation d')
    for probability, d in chi3_quantile_lines():
        axis.axhline(d, color='black', linewidth=0.6, linestyle=':')
        axis.annotate(f'chi(3) {100 * probability:g}% quantile ({d:.2f})', (1.0, d),
                      xycoords=('axes fraction', 'data'), xytext=(3, 0),
                      textcoords='offset points', va='center', fontsize=7)
    axis.set_yscale('log')
    _plain_log_ticks(axis)
    axis.set_ylabel('d (unsquared)')
    axis.set_title(DISTANCES_TITLE, fontsize=9, loc='left')
    axis.legend(loc='upper left', fontsize=7)


def level_panel(axis: Any, levels: Sequence[tuple[float, float, float]]) -> None:
    """Draw ``levels`` (``(t_s, raw rank, calibrated rank)``, ranks 0-2) as steps."""
    times = [t for t, _, _ in levels]
    axis.step(times, [raw + 0.04 for _, raw, _ in levels], where='post', label='raw (claimed)')
    axis.step(times, [calibrated for _, _, calibrated in levels], where='post',
              label='calibrated')
    axis.set_yticks([0, 1, 2], LEVEL_TICKS)
    axis.set_ylim(-0.3, 2.3)
    axis.set_title(LEVELS_TITLE, fontsize=9, loc='left')
    axis.legend(loc='lower left', fontsize=7)


def k_panel(axis: Any, series: Sequence[Sequence[Any]]) -> None:
    """Draw ``series`` (``(t_s, position (k, low, high) or None, orientation ...)``)."""
    for index, name in enumerate(('position', 'orientation')):
        points = [(row[0], row[1 + index]) for row in series if row[1 + index] is not None]
        if not points:
            continue
        times = [t for t, _ in points]
        axis.plot(times, [_clip(k) for _, (k, _, _) in points], linewidth=1, label=f'{name} k')
        axis.fill_between(times, [_clip(low) for _, (_, low, _) in points],
                          [_clip(high) for _, (_, _, high) in points], alpha=0.25,
                          label=f'{name} 95% interval')
    axis.axhline(1.0, color='black', linewidth=0.6, linestyle=':')
    axis.annotate('k = 1 (honest)', (1.0, 1.0), xycoords=('axes fraction', 'data'),
                  xytext=(3, 0), textcoords='offset points', va='center', fontsize=7)
    axis.set_yscale('log')
    _plain_log_ticks(axis)
    axis.set_ylabel('k (ratio of stds)')
    axis.set_title(K_TITLE, fontsize=9, loc='left')
    axis.legend(loc='upper left', fontsize=7, ncol=2)


def nees_panel(axis: Any, nees: Sequence[tuple[float, float, float]], confidence: float) -> None:
    """Draw ``nees`` (``(t_s, raw NEES, calibrated NEES)``) and 3, the honest mean."""
    times = [t for t, _, _ in nees]
    axis.scatter(times, [max(_clip(raw), 1e-3) for _, raw, _ in nees], s=5, color='#c0392b',
                 label='raw estimate')
    axis.scatter(times, [max(_clip(value), 1e-3) for _, _, value in nees], s=5,
                 color='#1f77b4', label=f'calibrated estimate (k bound at {confidence:g})')
    axis.axhline(3.0, color='black', linewidth=0.6, linestyle=':')
    axis.annotate('3 (honest mean)', (1.0, 3.0), xycoords=('axes fraction', 'data'),
                  xytext=(3, 0), textcoords='offset points', va='center', fontsize=7)
    axis.set_yscale('log')
    _plain_log_ticks(axis)
    axis.set_title(NEES_TITLE, fontsize=9, loc='left')
    axis.legend(loc='upper left', fontsize=7)


def build_figure(*, title: str, distances: Sequence[tuple[float, float, float]],
                 levels: Sequence[tuple[float, float, float]],
                 k_series: Sequence[Sequence[Any]],
                 episodes: Iterable[tuple[float, float, str]],
                 nees: Sequence[tuple[float, float, float]] | None = None,
                 nees_confidence: float = 0.975, time_label: str = 's from the bag start') -> Any:
    """Return the matplotlib Figure of the panels above (the NEES one only when ``nees``)."""
    rows = 4 if nees else 3
    result, axes = figure(rows, (3, 2, 2.5, 2), 2.6 * rows + 1.0)
    distance_panel(axes[0], distances)
    level_panel(axes[1], levels)
    k_panel(axes[2], k_series)
    if nees:
        nees_panel(axes[3], nees, nees_confidence)
    shade_episodes(axes, episodes)
    axes[-1].set_xlabel(f'time [{time_label}]; shaded: downgrade episodes (amber UNCERTAIN, '
                        'red UNKNOWN)')
    result.suptitle(title, fontsize=10, parse_math=False)  # a topic or bag name is plain text
    result.tight_layout()
    return result


def write_picture(path: str | os.PathLike[str], **data: Any) -> None:
    """Write :func:`build_figure` of ``data`` to ``path`` (PNG) and close it."""
    save(build_figure(**data), path)
