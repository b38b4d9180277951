# SPDX-License-Identifier: Apache-2.0
"""The audit's outputs: a JSON document with fleet totals, and a self-contained HTML report.

The HTML page embeds its PNGs (matplotlib, base64): per-robot timelines of the raw vs calibrated
level, the recorded distance distributions against the chi(3) law a calibrated estimator
follows, and a policy comparison table. The same PNGs are written beside it.
"""

import base64
from collections.abc import Iterable, Mapping, Sequence
import html
import io
import json
import math
import os
import statistics
from typing import Any

from ..safe_io import terminal_text
from ..core import NS_PER_S
from ..core.feedback import PolicySpec
from .injection import Injection

AUDIT_SCHEMA_VERSION = 2
"""2: episodes, ``overconfidence_over_run``; without injection ``windows`` (was ``untouched``)."""
TIMELINE_ROBOTS = 8
"""Robots drawn in the timelines figure: those with the most downgrades under the first policy."""
ROBOT_ROWS = 50
EPISODE_ROWS = 200
"""Rows of the report's episode table (every episode is in the JSON, up to EPISODE_LIMIT)."""
_WINDOWS_NOTE = (
    'Downgrade rates are empirical figures on the recorded traffic: the share of full windows '
    '(assessments judged on max_history outcomes) that a policy downgraded. A downgrade may '
    'be a real fault or a spurious one: compare the episodes and k with what is known of the '
    'runs. Consecutive windows overlap, so a rate rests on about '
    '"independent_windows" independent windows.')
_EMPIRICAL_NOTE = (
    'Detection delays and downgrade rates are empirical figures on the recorded traffic. '
    '"Downgrades before the injection" is the share of full windows before the injection instant '
    '(the whole bag without --inject) that a policy downgraded: they are false downgrades only '
    'as far as that stretch was calibrated (a real fault in the recording counts there too); '
    'consecutive windows overlap, so it rests on about "independent_windows" independent '
    'windows. A delay counts from the injection instant to the first downgrade after it '
    '(delay_outcomes: injected outcomes received by then). A robot whose policy was already '
    'downgrading just before the injection (a real fault before it) is reported as "fault '
    'before the injection" and left out of the detection figures.')
_GLOSSARY = (
    ('KNOWN / UNCERTAIN / UNKNOWN', 'the self-assessment levels, most to least confident; the '
     "raw level is the estimator's claim, the calibrated one what the policy made of it"),
    ('d', 'unsquared Mahalanobis distance of a prediction from what was then observed, per vec3 '
     '(position, orientation); a calibrated estimator gives d distributed as chi(3)'),
    ('full window', 'an assessment judged on max_history outcomes'),
    ('independent windows', 'full windows that share no outcome (overlapping windows are not '
     'independent evidence)'),
    ('k', 'how overconfident a vec3 is: true error / claimed standard deviation (a ratio of '
     'standard deviations; 1 honest, 3 errors three times the claim), with its 95% interval'),
    ('episode', 'a stretch of consecutive assessments whose calibrated level is below the raw '
     'one: from its first downgraded assessment to the first one back at the raw level; its k '
     "is that of the window with the largest k in it, its reason the policy's"),
    ('injection', 'with --inject K@T, every outcome from sim time T on is scaled by K: a known '
     'fault to detect'),
    ('delay [s] / [outcomes]', 'from the injection instant to the first downgrade after it, in '
     'sim seconds and in injected outcomes received'),
    ('fault before the injection', 'the policy was already downgrading just before the '
     'injection: a real fault; excluded from the detection figures'),
)
_INJECTION_TERMS = ('injection', 'delay [s] / [outcomes]', 'fault before the injection')
LEVEL_COLORS = {'KNOWN': '#4caf50', 'UNCERTAIN': '#ffb300', 'UNKNOWN': '#e53935'}


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def windows_key(figures: Mapping[str, Any]) -> str:
    """Return ``'untouched'`` (with an injection: before it) or ``'windows'`` (without)."""
    return 'untouched' if 'untouched' in figures else 'windows'


def _rate_key(key: str) -> str:
    return 'false_downgrade_rate' if key == 'untouched' else 'downgrade_rate'


def _totals(results: Sequence[Mapping[str, Any]], labels: Sequence[str],
            injected_run: bool) -> dict[str, Any]:
    totals = {}
    key = 'untouched' if injected_run else 'windows'
    for label in labels:
        runs = [r['policies'][label] for r in results if r.get('ok')]
        levels: dict[str, int] = {}
        time_per_level: dict[str, float] = {}
        untouched: dict[str, Any] = dict.fromkeys(
            ('assessments', 'downgrades', 'full_windows', 'full_window_downgrades',
             'independent_windows'), 0)
        for run in runs:
            for name, count in run['levels'].items():
                levels[name] = levels.get(name, 0) + count
            for name, seconds in run['time_per_level_s'].items():
                time_per_level[name] = time_per_level.get(name, 0.0) + seconds
            for name in untouched:
                untouched[name] += run[key][name]
        full = untouched['full_windows']
        untouched[_rate_key(key)] = (
            untouched['full_window_downgrades'] / full if full else None)
        injected = [run['injected'] for run in runs if 'injected' in run]
        # A robot already downgraded by a real fault at the injection says nothing about
        # detecting the injected one: reported apart, left out of the detection figures.
        calibrated = [i for i in injected if not i['downgraded_before_injection']]
        detected = [i for i in calibrated if i['detected']]
        total: dict[str, Any] = {
            'bags': len(runs), 'assessments': sum(run['assessments'] for run in runs),
            'levels': levels, 'time_per_level_s': time_per_level,
            'downgrades': sum(run['downgrades'] for run in runs),
            'bags_with_downgrades': sum(1 for run in runs if run['downgrades']),
            'transitions': sum(run['transitions'] for run in runs),
            'episodes': sum(run['episode_count'] for run in runs),
            'downgraded_s': sum(run['downgraded_s'] for run in runs),
            key: untouched,
        }
        if injected:
            delays = [i['delay_s'] for i in detected]
            outcomes = [i['delay_outcomes'] for i in detected]
            total['injected'] = {
                'bags': len(injected), 'calibrated_bags': len(calibrated),
                'detected': len(detected),
                'fault_before_injection': len(injected) - len(calibrated),
                'downgraded_before_injection': len(injected) - len(calibrated),
                'median_delay_s': _median(delays), 'max_delay_s': max(delays, default=None),
                'median_delay_outcomes': _median(outcomes),
                'max_delay_outcomes': max(outcomes, default=None),
            }
        totals[label] = total
    return totals


def build_document(results: Sequence[Mapping[str, Any]], *, policies: Sequence[PolicySpec],
                   max_history: int, injection: Injection | None = None,
                   problems: Iterable[str] = (),
                   engine: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return the JSON-ready audit document (``schema_version`` :data:`AUDIT_SCHEMA_VERSION`)."""
    labels = [spec.label for spec in policies]
    good = [r for r in results if r.get('ok')]
    return {
        'schema_version': AUDIT_SCHEMA_VERSION,
        'kind': 'ghost_feedback_audit',
        'config': {
            'policies': [{'label': spec.label, 'policy': spec.name,
                          'parameters': dict(spec.parameters)} for spec in policies],
            'max_history': max_history,
            # Without --inject no key speaks of an injection.
            **({'injection': injection.to_dict()} if injection is not None else {}),
        },
        'engine': engine or {},
        'bags_audited': len(good), 'bags_failed': len(results) - len(good),
        'failed': [{'bag': r['bag'], 'error': r['error']} for r in results if not r.get('ok')],
        'discovery_problems': list(problems),
        'totals': _totals(good, labels, injection is not None),
        'notes': [_EMPIRICAL_NOTE if injection is not None else _WINDOWS_NOTE],
        'bags': good,
    }


def dumps(document: Mapping[str, Any]) -> str:
    """Return the document as strict JSON (it holds no non-finite float)."""
    return json.dumps(document, indent=1, sort_keys=False, allow_nan=False)


# -- figures --------------------------------------------------------------------------------------

def _chi3_pdf(d: float) -> float:
    return math.sqrt(2.0 / math.pi) * d * d * math.exp(-d * d / 2.0)


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png', dpi=80)
    return buffer.getvalue()


def _level_rank(name: str) -> int:
    return {'UNKNOWN': 0, 'UNCERTAIN': 1, 'KNOWN': 2}[name]


def _bands(axis: Any, lane: int, timeline: Sequence[Sequence[Any]], start: int,
           end_s: float) -> None:
    """Draw one lane of coloured level bands from a timeline of (stamp, level) change points."""
    for index, (stamp, level) in enumerate(timeline):
        left = (stamp - start) / NS_PER_S
        right = ((timeline[index + 1][0] - start) / NS_PER_S if index + 1 < len(timeline)
                 else max(end_s, left))
        axis.broken_barh([(left, max(right - left, 1e-9))], (lane - 0.4, 0.8),
                         color=LEVEL_COLORS[level], linewidth=0)


def timelines_png(document: Mapping[str, Any], plt: Any) -> bytes:
    """Return PNG bytes: per robot, one lane per policy (and the raw level) of level bands."""
    bags = document['bags']
    labels = [p['label'] for p in document['config']['policies']]
    first = labels[0] if labels else None
    chosen = sorted(bags, key=lambda b: -b['policies'][first]['downgrades'] if first else 0)
    chosen = chosen[:TIMELINE_ROBOTS]
    lanes = ['raw'] + labels
    rows = max(len(chosen), 1)
    figure, axes = plt.subplots(rows, 1, figsize=(9, (0.28 * len(lanes) + 0.5) * rows + 0.9),
                                sharex=False, squeeze=False)
    from matplotlib.patches import Patch

    for axis, bag in zip(axes[:, 0], chosen):
        start = bag['time_origin']['stamp_ns']  # the episodes' origin: the same seconds
        end_s = ((bag.get('end_time_ns') or start) - start) / NS_PER_S
        series = [bag['raw']['timeline']]
        series += [bag['policies'][label]['timeline'] for label in labels]
        for lane, timeline in enumerate(series):
            _bands(axis, len(lanes) - 1 - lane, timeline, start, end_s)
        if bag.get('injection_stamp_sim_ns') is not None:
            axis.axvline((bag['injection_stamp_sim_ns'] - start) / NS_PER_S, color='black',
                         linestyle='--', linewidth=1)
        axis.set_yticks(range(len(lanes)), [terminal_text(lane) for lane in reversed(lanes)],
                        fontsize=7)
        axis.set_ylim(-0.6, len(lanes) - 0.4)
        # A robot is a directory name: plain text, never mathtext (``r$\\foo$`` would raise).
        axis.set_title(terminal_text(bag['robot']), fontsize=8, loc='left', parse_math=False)
        axis.tick_params(axis='x', labelsize=7)
        for tick in axis.get_yticklabels():
            tick.set_parse_math(False)
    injected = document['config'].get('injection') is not None
    axes[-1, 0].set_xlabel('time since the bag start [s]' + (
        '; dashed: injection instant' if injected else ''), fontsize=8)
    key = [Patch(color=color, label=level) for level, color in LEVEL_COLORS.items()]
    figure.legend(handles=key, loc='upper right', ncol=3, fontsize=7, frameon=False)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    data = _png(figure)
    plt.close(figure)
    return data


def distances_png(document: Mapping[str, Any], plt: Any) -> bytes:
    """Return PNG bytes: fleet histograms of the recorded distances against the chi(3) density."""
    figure, axes = plt.subplots(1, 2, figsize=(9, 3))
    for axis, which in zip(axes, ('position', 'orientation')):
        bins: list[int] | None = None
        over = inf = 0
        width = 0.1
        for bag in document['bags']:
            hist = bag['distances'][which]
            width = hist['bin_width']
            counts = hist['bins']
            bins = list(counts) if bins is None else [a + b for a, b in zip(bins, counts)]
            over += hist['over']
            inf += hist['inf']
        bins = bins or [0]
        total = sum(bins) + over + inf
        centers = [(i + 0.5) * width for i in range(len(bins))]
        density = [count / (total * width) if total else 0.0 for count in bins]
        axis.bar(centers, density, width=width, alpha=0.6, label=f'recorded ({total} outcomes)')
        axis.plot(centers, [_chi3_pdf(x) for x in centers], color='black', label='chi(3)')
        axis.set_title(f'{which} Mahalanobis distance (beyond {len(bins) * width:g}: '
                       f'{over}, +inf: {inf})', fontsize=8)
        axis.set_xlabel('unsquared distance', fontsize=8)
        axis.legend(fontsize=7)
        axis.tick_params(labelsize=7)
    figure.tight_layout()
    data = _png(figure)
    plt.close(figure)
    return data


# -- HTML -----------------------------------------------------------------------------------------

def _fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return '-'
    if isinstance(value, float):
        return f'{value:.{digits}g}'
    return str(value)


def _policy_table(document: Mapping[str, Any]) -> str:
    injected_run = document['config'].get('injection') is not None
    header = ['policy', 'robots', 'assessments', 'KNOWN / UNCERTAIN / UNKNOWN', 'downgrades',
              'robots with downgrades', 'episodes', 'time downgraded [s]']
    if injected_run:
        header += ['downgrades before the injection / full window (windows; independent)',
                   'injection detected (of robots calibrated at it)',
                   'fault before the injection', 'median / max delay [s]',
                   'median / max delay [outcomes]']
    else:
        header += ['downgraded full windows (windows; independent)']
    rows = []
    for label, total in document['totals'].items():
        levels = total['levels']
        key = windows_key(total)
        windows = total[key]
        rate = windows[_rate_key(key)]
        cells = [
            label, total['bags'], total['assessments'],
            f'{levels.get("KNOWN", 0)} / {levels.get("UNCERTAIN", 0)} / {levels.get("UNKNOWN", 0)}',
            total['downgrades'], total['bags_with_downgrades'], total['episodes'],
            _fmt(total['downgraded_s']),
            f'{"-" if rate is None else f"{100 * rate:.2f}%"} ({windows["full_windows"]}; '
            f'~{windows["independent_windows"]})']
        injected = total.get('injected')
        if injected_run:
            cells += [
                f'{injected["detected"]} of {injected["calibrated_bags"]}' if injected else '-',
                injected['fault_before_injection'] if injected else '-',
                f'{_fmt(injected["median_delay_s"])} / {_fmt(injected["max_delay_s"])}'
                if injected else '-',
                f'{_fmt(injected["median_delay_outcomes"])} / '
                f'{_fmt(injected["max_delay_outcomes"])}' if injected else '-']
        rows.append(cells)
    return _table(header, rows)


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ['<table><tr>' + ''.join(f'<th>{html.escape(h)}</th>' for h in header) + '</tr>']
    for cells in rows:
        lines.append('<tr>' + ''.join(f'<td>{html.escape(str(c))}</td>' for c in cells) + '</tr>')
    lines.append('</table>')
    return '\n'.join(lines)


def _k_text(estimate: Mapping[str, Any] | None) -> str:
    """Return ``2.90 [2.50, 3.40]`` of an estimate dict, '-' when None."""
    if estimate is None:
        return '-'

    def number(value: object) -> str:
        return value if isinstance(value, str) else f'{value:.2f}'

    return f'{number(estimate["k_hat"])} [{number(estimate["low"])}, {number(estimate["high"])}]'


def k_pair_text(estimates: Mapping[str, Any] | None) -> str:
    """Return ``position 1.02 [0.95, 1.10]; orientation ...`` of a per-vec3 dict."""
    if not estimates:
        return '-'
    return '; '.join(f'{name} {_k_text(estimates.get(name))}'
                     for name in ('position', 'orientation'))


def _sorted_bags(document: Mapping[str, Any]) -> list[Any]:
    labels = [p['label'] for p in document['config']['policies']]
    return sorted(document['bags'], key=lambda b: (
        -b['policies'][labels[0]]['downgrades'] if labels else 0, b['bag']))


def _robot_table(document: Mapping[str, Any], limit: int = ROBOT_ROWS) -> str:
    labels = [p['label'] for p in document['config']['policies']]
    bags = _sorted_bags(document)
    header = ['robot', 'bag', 'assessments', 'k over the run (95% interval)'] + [
        f'{label}: downgrades, episodes, time downgraded [s], first [s]; status'
        for label in labels]
    rows = []
    for bag in bags[:limit]:
        origin = bag['time_origin']['stamp_ns']
        over_run = bag.get('overconfidence_over_run') or {}
        cells = [bag['robot'], bag['bag'], bag['assessments'], k_pair_text(over_run)]
        for label in labels:
            figures = bag['policies'][label]
            first = figures['first_downgrade_stamp_sim_ns']
            first_s = None if first is None else (first - origin) / NS_PER_S
            cells.append(f'{figures["downgrades"]}, {figures["episode_count"]}, '
                         f'{_fmt(figures["downgraded_s"])}, {_fmt(first_s)}; '
                         f'{robot_status(figures)}')
        rows.append(cells)
    text = _table(header, rows)
    if len(bags) > limit:
        text += f'\n<p>... and {len(bags) - limit} more robots (all in the JSON).</p>'
    return text


def _episode_table(document: Mapping[str, Any], limit: int = EPISODE_ROWS) -> str:
    """Return the table of downgrade episodes (robots in the robots table's order)."""
    labels = [p['label'] for p in document['config']['policies']]
    header = ['robot', 'policy', 'from [s]', 'to [s]', 'duration [s]', 'level', 'reason',
              'peak k: position', 'peak k: orientation']
    rows: list[list[object]] = []
    total = 0
    for bag in _sorted_bags(document):
        for label in labels:
            figures = bag['policies'][label]
            total += figures['episode_count']
            for episode in figures['episodes']:
                if len(rows) >= limit:
                    continue
                k = episode['overconfidence'] or {}
                rows.append([
                    bag['robot'], label, _fmt(episode['start_s'], 5),
                    f'{_fmt(episode["end_s"], 5)}{" (end of bag)" if episode["ongoing"] else ""}',
                    _fmt(episode['duration_s']),
                    f'{episode["level"]} (raw {episode["raw_level"]})', episode['reason'],
                    _k_text(k.get('position')), _k_text(k.get('orientation'))])
    if not rows:
        return '<p>No downgrade episode.</p>'
    text = _table(header, rows)
    if total > len(rows):
        text += f'\n<p>... {total - len(rows)} more episodes (the JSON has them).</p>'
    return text


def robot_status(figures: Mapping[str, Any]) -> str:
    """Return one robot's status under one policy, in words."""
    injected = figures.get('injected')
    if injected is None:
        return 'downgraded' if figures['downgrades'] else 'never downgraded'
    if injected['downgraded_before_injection']:
        return 'fault before the injection (excluded)'
    if injected['detected']:
        return f'injection detected after {_fmt(injected.get("delay_s"))} s'
    return 'injection NOT detected'


def _glossary(injected_run: bool) -> str:
    items = ''.join(f'<dt>{html.escape(term)}</dt><dd>{html.escape(text)}</dd>'
                    for term, text in _GLOSSARY
                    if injected_run or term not in _INJECTION_TERMS)
    colors = ', '.join(f'{level} {color}' for level, color in LEVEL_COLORS.items())
    return (f'<h2>How to read this page</h2><dl>{items}</dl>'
            f'<p><small>Level colours in the timelines: {html.escape(colors)}.</small></p>')


_STYLE = ('body{font-family:sans-serif;max-width:1000px;margin:1em auto}'
          'table{border-collapse:collapse;font-size:13px}'
          'td,th{border:1px solid #bbb;padding:3px 6px}th{background:#eee}'
          'img{max-width:100%}')


def render_html(document: Mapping[str, Any], images: Mapping[str, bytes]) -> str:
    """Return the report page; ``images`` maps a title to PNG bytes, embedded as base64."""
    config = document['config']
    injection = config.get('injection')
    parts = [
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>ghost-feedback audit</title>',
        f'<style>{_STYLE}</style></head><body>',
        '<h1>ghost-feedback audit</h1>',
        f'<p>{document["bags_audited"]} bags audited, {document["bags_failed"]} failed; '
        f'max_history {config["max_history"]}'
        f'{"; injection: " + html.escape(json.dumps(injection)) if injection else ""}.</p>',
        '<h2>Policy comparison</h2>', _policy_table(document),
        f'<p><small>{html.escape(document["notes"][0])}</small></p>',
        _glossary(injection is not None),
    ]
    if document['failed'] or document['discovery_problems']:
        parts.append('<h2>Bags that failed</h2><ul>')
        for item in document['failed']:
            parts.append(f'<li><code>{html.escape(item["bag"])}</code>: '
                         f'{html.escape(item["error"])}</li>')
        for problem in document['discovery_problems']:
            parts.append(f'<li>{html.escape(problem)}</li>')
        parts.append('</ul>')
    if document['bags']:
        parts += ['<h2>Robots (most downgrades first)</h2>', _robot_table(document),
                  '<h2>Downgrade episodes (seconds from each bag start)</h2>',
                  _episode_table(document)]
    for title, data in images.items():
        encoded = base64.b64encode(data).decode('ascii')
        parts.append(f'<h2>{html.escape(title)}</h2>'
                     f'<img alt="{html.escape(title)}" src="data:image/png;base64,{encoded}">')
    parts.append('</body></html>')
    return '\n'.join(parts)


def write_report(document: Mapping[str, Any], directory: str) -> list[str]:
    """Write ``index.html`` (self-contained) and its PNGs into ``directory``; return the paths."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    os.makedirs(directory, exist_ok=True)
    images: dict[str, bytes] = {}
    if document['bags']:
        images['Raw vs calibrated level per robot'] = timelines_png(document, plt)
        images['Distance distributions against chi(3)'] = distances_png(document, plt)
    paths: list[str] = []
    for name, data in zip(('timelines.png', 'distances.png'), images.values()):
        path = os.path.join(directory, name)
        with open(path, 'wb') as stream:
            stream.write(data)
        paths.append(path)
    page = os.path.join(directory, 'index.html')
    # backslashreplace: a path that is not UTF-8 (a surrogate escape) must not stop the page.
    with open(page, 'w', encoding='utf-8', errors='backslashreplace') as stream:
        stream.write(render_html(document, images))
    return [page] + paths
