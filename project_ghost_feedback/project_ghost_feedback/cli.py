# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback``: inspect and replay telemetry bags, echo calibrated assessments, run the demo.

Run ``ghost-feedback --help`` or ``ghost-feedback <command> --help``. Exit status: 0 success;
1 ``replay`` found recorded != recomputed with the recorded configuration; 2 usage error or a bag
that cannot be read (one line on stderr, no traceback); 130 interrupted.
"""

import argparse
import json
import math
import sys
from typing import cast, NoReturn, TextIO, TYPE_CHECKING

from .core import NS_PER_S

if TYPE_CHECKING:
    from .telemetry.replay_report import ReplayReport

PROG = 'ghost-feedback'

_DESCRIPTION = """\
Tools for project_ghost_feedback, the closed-loop feedback that keeps a state estimator's
self-assessment honest (ADR-0026).

A telemetry bag is a rosbag2 bag directory (MCAP storage) holding the feedback node's inputs
(/prediction_outcome, /self_assessment/raw) and its output (/self_assessment/calibrated). Record
one with the node's parameter telemetry_bag:=DIR, or with `ros2 bag record -s mcap` on a ROS
install.
"""

_EPILOG = """\
examples:
  ghost-feedback info run1                 topics, message counts, time range of bag run1/
  ghost-feedback replay run1               recompute every calibrated assessment and check it
                                           equals the recorded one (exit 1 if not)
  ghost-feedback replay run1 --policy calibrated_exceedance
                                           what another policy would have decided
  ghost-feedback replay run1 --set false_alarm_probability=0.01 --json
  ghost-feedback audit fleet/ --inject 10@random --seed 1 --report out/audit
                                           every bag under fleet/, every policy, on dask
  ghost-feedback evaluate bag1 --estimate /odometry/filtered --reference /ground_truth/odom
                                           the bridge and the loop over an ordinary bag
  ghost-feedback echo --count 5            changes and a summary a second, 5 assessments
  ghost-feedback echo --full               every message whole, as YAML
  ghost-feedback demo --help               the demo's own options
"""

_REPLAY_DESCRIPTION = """\
Replay a telemetry bag through the pure core: the recorded outcomes and raw assessments are fed,
in recorded order, through the same outcome window and assess_with_feedback as the feedback node.

Without --policy/--set/--max-history/--outcome-buffer-size the configuration is the one recorded in
the bag (the node's recorder stores it; otherwise the defaults): every recomputed calibrated
assessment must equal the recorded one, and the first difference is reported (exit 1).

With another configuration the report says what would have changed: calibrated levels per level,
downgrades and the stamp of the first downgrade, recorded vs recomputed, and how many assessments
would have got another level.
"""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse with a one-line error (exit 2), as for every other error of this tool."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f'{self.prog}: error: {message}\n')


def _fail(message: object, status: int = 2) -> int:
    """Print ``ghost-feedback: error: <message>`` (one line, escaped) on stderr; return status."""
    from .safe_io import print_error

    print_error(PROG, message)
    return status


def _parse_setting(text: str) -> tuple[str, str]:
    from .core.feedback import parse_setting

    try:
        return parse_setting(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected an integer >= 1, got {text!r}') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'expected an integer >= 1, got {text!r}')
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected a number > 0, got {text!r}') from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f'expected a number > 0, got {text!r}')
    return value


def _format_stamp(stamp: int | None) -> str:
    if stamp is None:
        return '-'
    return f'{stamp} ns ({stamp / NS_PER_S:.9f} s)'


# -- info -----------------------------------------------------------------------------------------

def _command_info(args: argparse.Namespace) -> int:
    import pathlib

    from .safe_io import cut_text
    from .telemetry import bag_info, BagError
    from .telemetry.bag_reader import mcap_file_info

    bare = pathlib.Path(args.bag).suffix == '.mcap' and not pathlib.Path(args.bag).is_dir()
    try:
        info = mcap_file_info(args.bag) if bare else bag_info(args.bag)
    except BagError as error:
        return _fail(error)
    if args.json:
        print(json.dumps({
            'path': info.path, 'version': info.version,
            'storage_identifier': info.storage_identifier, 'ros_distro': info.ros_distro,
            'files': [{'path': p, 'message_count': c} for p, c in info.files],
            'message_count': info.message_count, 'start_time_ns': info.start_time_ns,
            'end_time_ns': info.end_time_ns, 'duration_ns': info.duration_ns,
            'topics': [{
                'name': t.name, 'type': t.msgtype, 'message_count': t.message_count,
                'type_description_hash': t.type_description_hash,
                'definition': t.definition,
            } for t in info.topics],
            'counts_source': info.counts_source,
            'skipped_oversized': {cut_text(topic): count
                                  for topic, count in info.skipped.items()},
            'custom_data': {cut_text(key): cut_text(value)
                            for key, value in info.custom_data.items()},
        }, indent=2, sort_keys=False))
        return 0
    print(f'bag:         {info.path}')
    if bare:
        print('format:      a bare MCAP file (no metadata.yaml: read from the file itself)')
    else:
        print(f'format:      rosbag2 version {info.version}, storage {info.storage_identifier}, '
              f'ros_distro {info.ros_distro or "-"}')
    print(f'files:       {", ".join(p for p, _ in info.files) or "-"}')
    print(f'messages:    {info.message_count} (counted in the {info.counts_source}'
          + (')' if bare else ', equal to metadata.yaml)'))
    if info.message_count:
        print(f'time range:  {_format_stamp(info.start_time_ns)} .. '
              f'{_format_stamp(info.end_time_ns)}')
        print(f'duration:    {info.duration_ns / NS_PER_S:.9f} s')
    else:
        print('time range:  - (no messages)')
    print('topics:')
    names = [(cut_text(t.name), cut_text(t.msgtype)) for t in info.topics]
    width = max((len(name) for name, _ in names), default=0)
    type_width = max((len(msgtype) for _, msgtype in names), default=0)
    for topic, (name, msgtype) in zip(info.topics, names):
        note = {'different': '  DIFFERENT DEFINITION than ours', 'same': '',
                'legacy': '  earlier definition of ours (ADR-0026a), still read'}.get(
            topic.definition, '')
        print(f'  {name:<{width}}  {msgtype:<{type_width}}  '
              f'{topic.message_count:>9}{note}')
    if info.skipped:
        print(f'skipped:     {sum(info.skipped.values())} message(s) over the 1 MiB limit on '
              "topics not the node's own (not refused): "
              + ', '.join(f'{cut_text(topic)} {count}'
                          for topic, count in sorted(info.skipped.items())))
    if info.custom_data:
        print('custom data:')
        for key, value in sorted(info.custom_data.items()):
            print(f'  {cut_text(key)}: {cut_text(value)}')
    return 0


# -- replay ---------------------------------------------------------------------------------------

def _print_level_table(report: 'ReplayReport') -> None:
    """Print levels, downgrades and first downgrade, recorded vs recomputed, in apart columns."""
    has_recorded = report.recorded_outputs > 0

    def stamp(value: int | None) -> str:
        return '-' if value is None else str(value)

    rows = [(level, report.recorded.levels[level], report.recomputed.levels[level])
            for level in report.recomputed.levels]
    rows.append(('downgrades', report.recorded.downgrades, report.recomputed.downgrades))
    rows.append(('first downgrade (ns)', stamp(report.recorded.first_downgrade_stamp_sim_ns),
                 stamp(report.recomputed.first_downgrade_stamp_sim_ns)))
    columns = (1, 2) if has_recorded else (2,)
    # Two spaces at least between columns, whatever the widest value (a 19-digit stamp).
    width = max([12] + [len(str(row[c])) for row in rows for c in columns]) + 2
    titles = {1: 'recorded', 2: 'recomputed'}
    print(f'{"":<22}' + ''.join(f'{titles[c]:>{width}}' for c in columns))
    for row in rows:
        print(f'{row[0]:<22}' + ''.join(f'{row[c]!s:>{width}}' for c in columns))


def _command_replay(args: argparse.Namespace) -> int:
    from .telemetry import BagError
    from .telemetry.replay import replay_bag

    try:
        report = replay_bag(
            args.bag, policy=args.policy, parameters=dict(args.settings) or None,
            max_history=args.max_history, outcome_buffer_size=args.outcome_buffer_size,
            order=args.order)
    except BagError as error:
        return _fail(error)
    except (TypeError, ValueError) as error:
        return _fail(error)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, allow_nan=False))
    else:
        _print_replay(report)
    if report.mode == 'verify' and report.identical is False:
        return 1
    return 0


def _value_text(value: object) -> str:
    """Return a field value of a recorded message as printed: cut, as every text from a bag."""
    from .safe_io import cut_text

    if hasattr(value, 'name') and not isinstance(value, str):
        return cut_text(value.name)
    if isinstance(value, float) and math.isinf(value):
        return repr(value)
    return cut_text(repr(value) if isinstance(value, str) else str(value))


def _print_replay(report: 'ReplayReport') -> None:
    from .core.feedback import format_overconfidence
    from .safe_io import cut_text

    config = report.replay_config
    print(f'bag:       {report.bag}')
    source = {'recorded': 'recorded in the bag', 'assumed': 'assumed: defaults'}
    print(f'recorded:  {report.recorded_config.describe()} '
          f'({source.get(report.config_source, report.config_source)})')
    if report.mode == 'compare':
        print(f'replayed:  {config.describe()}')
    print(f'inputs:    {report.outcomes} outcomes, {report.assessments} raw assessments '
          f'({report.order} order); {report.recorded_outputs} recorded calibrated assessments')
    if report.events or report.resets:
        print(f'events:    {report.events} recorded; resets replayed: '
              + (', '.join(f'{k} {v}' for k, v in sorted(report.resets.items())) or 'none'))
    for warning in report.warnings:
        print(f'warning:   {cut_text(warning, 1000)}')
    if report.rejected:
        print(f'rejected:  {sum(report.rejected.values())} inputs skipped as the node does ('
              + ', '.join(f'{k} {v}' for k, v in sorted(report.rejected.items())) + ')')
    first = report.first_difference
    if report.mode == 'verify':
        if report.identical is None:
            print('verify:    nothing to verify (the bag holds no calibrated assessments)')
        elif report.identical:
            print(f'verify:    OK, recomputed == recorded for all {report.compared} '
                  'calibrated assessments')
        else:
            print(f'verify:    MISMATCH, {report.differences} of {report.compared} '
                  'recomputed calibrated assessments differ from the recorded ones')
    if first is not None and report.mode == 'verify':
        print(f'first difference: assessment #{first.index} '
              f'(belief stamp {_format_stamp(first.belief_stamp_sim_ns)}), '
              f'{first.field}: recorded {_value_text(first.recorded)}, '
              f'recomputed {_value_text(first.recomputed)}')
    print()
    _print_level_table(report)
    last = report.recomputed.last_history
    estimates = format_overconfidence(last)
    if any(estimates.values()):  # ADR-0026a: schema-2 histories only
        print('overconfidence (recomputed, last window, k_hat [95%]): '
              + ', '.join(f'{vec3} {text or "-"}' for vec3, text in estimates.items()))
    from .core.feedback.episodes import episode_lines

    recomputed = report.to_dict()['recomputed']
    print('\n'.join(['recomputed ' + line if i == 0 else line for i, line in enumerate(
        episode_lines(recomputed['episodes'], report.time_origin()[1], where='--json'))]))
    if report.recorded_outputs > 0:
        print()
        print(f'changed level: {report.changed_levels} of {report.compared} assessments '
              f'({report.more_confident} more confident, {report.less_confident} less)')
        if report.first_change is not None:
            change = report.first_change
            print(f'first change:  assessment #{change.index} '
                  f'(belief stamp {_format_stamp(change.belief_stamp_sim_ns)}): '
                  f'{_value_text(change.recorded)} -> {_value_text(change.recomputed)}')
        if report.mode == 'compare' and first is not None:
            print(f'first difference: assessment #{first.index}, {first.field}: '
                  f'recorded {_value_text(first.recorded)}, '
                  f'recomputed {_value_text(first.recomputed)}')


# -- echo -----------------------------------------------------------------------------------------

def _command_echo(args: argparse.Namespace) -> int:
    from .ros.echo import run

    return run(args, _fail, PROG)


# -- demo -----------------------------------------------------------------------------------------

def _command_demo(args: argparse.Namespace) -> int:
    from . import demo

    result = demo.main(list(args.demo_args))
    return 0 if result is None else int(result)


# -- parser ---------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    """Return the argparse parser of ``ghost-feedback``."""
    from .core.feedback import DEFAULT_MAX_HISTORY, policy_names
    from .core.window import DEFAULT_OUTCOME_BUFFER_SIZE

    parser = _ArgumentParser(
        prog=PROG, description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest='command', metavar='COMMAND')
    commands.required = True

    info = commands.add_parser(
        'info', help='topics, message counts and time range of a bag',
        description='Show what a rosbag2 bag directory holds: format, topics and types, message '
        'counts, time range (sim ns for telemetry bags) and the recorded node configuration.')
    info.add_argument('bag', metavar='BAG',
                      help='bag directory (the one holding metadata.yaml), or a bare .mcap file')
    info.add_argument('--json', action='store_true', help='print JSON instead of text')
    info.set_defaults(handler=_command_info)

    replay = commands.add_parser(
        'replay', help='recompute a bag through the core; verify it or compare another policy',
        description=_REPLAY_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    replay.add_argument('bag', metavar='BAG', help='bag directory (the one holding metadata.yaml)')
    replay.add_argument(
        '--policy', metavar='NAME', choices=policy_names(),
        help=f'replay with this policy instead of the recorded one ({", ".join(policy_names())})')
    replay.add_argument(
        '--set', dest='settings', metavar='KEY=VALUE', action='append', type=_parse_setting,
        default=[],
        help='set a policy parameter (repeatable), e.g. --set false_alarm_probability=0.01')
    replay.add_argument(
        '--max-history', metavar='N', type=_positive_int,
        help='outcomes per calibration window (default: the recorded value, else '
        f'{DEFAULT_MAX_HISTORY})')
    replay.add_argument(
        '--outcome-buffer-size', metavar='N', type=_positive_int,
        help="the node's outcome_buffer_size (default: the recorded value, else "
        f'{DEFAULT_OUTCOME_BUFFER_SIZE})')
    replay.add_argument(
        '--order', choices=('recorded', 'stamp'), default='recorded',
        help='recorded: the order messages were written (the node processing order); stamp: '
        'log-time order (default: recorded)')
    replay.add_argument('--json', action='store_true', help='print the report as JSON')
    replay.set_defaults(handler=_command_replay)

    echo = commands.add_parser(
        'echo', help='print live calibrated assessments: changes, and a summary each second '
        '(needs rclpy)',
        description='Subscribe to a CalibratedSelfAssessment topic and print a line for each '
        'change of the levels or the reason, and a summary line once a second (the latest '
        'assessment and how many came): seconds from the first one echoed (message stamps), '
        'raw -> calibrated level, the reason, and the overconfidence factor k per vec3 (the '
        "ratio of the real error's standard deviation to the claimed one, with its 95%% "
        'interval). An unverified assessment (no outcome for a while) is followed by what the '
        "outcome bridge of the topic's namespace last said on /diagnostics (the cause). "
        '--every prints a line per assessment; --full each message as YAML, separated by ---. '
        'Says so on stderr while nothing arrives. Stops after --count messages, after '
        '--timeout, or on Ctrl-C.')
    echo.add_argument('--topic', default='/self_assessment/calibrated',
                      help='topic to echo (default: /self_assessment/calibrated)')
    echo.add_argument('--count', metavar='N', type=_positive_int,
                      help='exit after N messages (default: run until Ctrl-C)')
    echo.add_argument('--every', action='store_true',
                      help='a line per assessment (default: changes and one summary a second)')
    echo.add_argument('--full', action='store_true',
                      help='print every message whole, as YAML (as ros2 topic echo does)')
    echo.add_argument('--vec3-components', metavar=('POSITION', 'ORIENTATION'), nargs=2,
                      type=int, choices=(1, 2, 3),
                      help="error components the outcomes keep per vec3, as the feedback node's "
                      'position_components / orientation_components (default 3 3; 2 1 for a '
                      'planar estimator): k is read with them')
    echo.add_argument('--timeout', metavar='S', type=_positive_float,
                      help='exit 1 with one line when --count messages (or one) did not come '
                      'within S seconds')
    echo.set_defaults(handler=_command_echo)

    from .audit.command import build as build_audit

    build_audit(commands, _positive_int, _fail)

    from .evaluate.command import build as build_evaluate

    build_evaluate(commands, _positive_int, _fail)

    demo = commands.add_parser(
        'demo', help='run the demo (arguments after "demo" go to it)', add_help=False,
        description='Run project_ghost_feedback.demo; every argument after "demo" is passed on.')
    demo.add_argument('demo_args', nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    demo.set_defaults(handler=_command_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``ghost-feedback``; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] == 'demo':
        # Everything after "demo" belongs to the demo, options included.
        args = argparse.Namespace(handler=_command_demo, demo_args=argv[1:])
    else:
        args = parser.parse_args(argv)
    stdout = sys.stdout
    if args.handler is not _command_demo and args.handler is not _command_echo:
        from .safe_io import TerminalStream

        # text from bags: no control characters (a TerminalStream passes the rest to stdout)
        sys.stdout = cast(TextIO, TerminalStream(stdout))
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        _fail('interrupted')
        return 130
    except BrokenPipeError:
        return 0
    finally:
        sys.stdout = stdout


if __name__ == '__main__':
    sys.exit(main())
