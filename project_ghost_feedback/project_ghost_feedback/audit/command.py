# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback audit PATH... [options]``: the command-line glue of the fleet audit.

Exit status: 0 every bag audited; 1 the audit ran but some bags failed (each with its one-line
reason on stderr and in the JSON); 2 usage error, no bag to audit, or an output that cannot be
written; 130 interrupted (Ctrl-C; SIGTERM likewise): the cluster is closed, its worker processes
ended and its scratch directory removed.
"""

import argparse
from collections.abc import Callable, Mapping
import os
import re
import shutil
import signal
import sys
from types import FrameType
from typing import Any, IO

from .discovery import ROBOT_NAME_MODES

DESCRIPTION = """\
Replay every telemetry bag found under PATH... under every --policy, in parallel on
dask.distributed (an embedded LocalCluster of --workers processes bound to 127.0.0.1, or the
cluster at --scheduler, whose workers must see the same paths), and report per bag and policy:
assessments, time per level, downgrades, the downgrade episodes (from, to, level, reason, k =
true error / claimed std with its 95% interval), k over the run, level transitions; with
--inject, the detection delay of a fault injected into the recorded outcomes (a robot already
downgraded by a real fault at the injection is reported as such and left out of the detection
figures), and the downgrades before the injection (false downgrades only where that stretch was
calibrated). A bag that fails is reported with its reason; the audit goes on.

Trust: dask exchanges pickles, so whoever can talk to a scheduler can run code on its workers
(and a scheduler on its clients). The embedded cluster accepts only this process (TLS with a key
made for it, in memory). With --scheduler use only schedulers and workers you trust: tls:// with
--tls-ca-file/--tls-cert/--tls-key; a tcp:// scheduler off this host is open to anyone who can
reach it.
"""

_SCHEDULER = re.compile(r'^(tcp|tls)://[^/\s]+:\d+$')
WORKERS_PER_CORE = 4
"""--workers above this many per core is refused unless --no-worker-limit."""


def add_arguments(parser: argparse.ArgumentParser, positive_int: Callable[[str], int]) -> None:
    """Add the audit's arguments to ``parser``."""
    parser.add_argument('paths', metavar='PATH', nargs='+',
                        help='bag directories, or directories to search for bags')
    parser.add_argument(
        '--policy', dest='policies', metavar='NAME[:k=v,...]', action='append', default=[],
        help='a policy and its parameters (repeatable; default: all registered policies, the '
        'default policy first, e.g. calibrated_exceedance:false_alarm_probability=0.01)')
    parser.add_argument('--max-history', metavar='N', type=positive_int, default=None,
                        help='outcomes per calibration window (default 32)')
    parser.add_argument('--scheduler', metavar='tls://HOST:PORT',
                        help='an existing dask scheduler, tls:// (with the three --tls-* files) '
                        'or tcp:// (unauthenticated: anyone who can reach it can run code); '
                        'default: an embedded LocalCluster that accepts only this process')
    parser.add_argument('--tls-ca-file', metavar='PEM',
                        help='CA certificate the tls:// scheduler must be signed by')
    parser.add_argument('--tls-cert', metavar='PEM', help='client certificate for tls://')
    parser.add_argument('--tls-key', metavar='PEM', help='client private key for tls://')
    parser.add_argument('--workers', metavar='N', type=positive_int,
                        help='LocalCluster worker processes (default: the number of cores; at '
                        f'most {WORKERS_PER_CORE} per core unless --no-worker-limit)')
    parser.add_argument('--no-worker-limit', action='store_true',
                        help=f'allow --workers above {WORKERS_PER_CORE} per core')
    parser.add_argument(
        '--inject', metavar='K[@T]',
        help='multiply recorded distances and errors by K from T s after each bag start '
        '(default 0), or from a seeded random instant with K@random --seed S')
    parser.add_argument('--seed', type=int, help='seed of K@random injection instants')
    parser.add_argument('--json', metavar='OUT', help='write the JSON document to OUT (- = stdout)')
    parser.add_argument('--report', metavar='DIR',
                        help='write the HTML report (index.html + PNGs) into DIR')
    parser.add_argument('--no-progress', action='store_true', help='no progress bar on stderr')
    parser.add_argument('--robot-name-from', choices=ROBOT_NAME_MODES, default='auto',
                        help='name each robot after its bag folder (bag), the folder holding '
                             'it (parent), or auto: the parent for timestamped bag folders '
                             '(rosbag2_YYYY_MM_DD-..., ghost_feedback_...), else the bag folder')
    from ..bridge_inputs import add_input_arguments

    add_input_arguments(parser, " (required for ordinary bags, with --reference: their "
                                "outcomes come from the bridge's engine, as with evaluate; "
                                'telemetry bags need neither)')
    parser.add_argument('--navsat-fix', metavar='TOPIC',
                        help='bags with GNSS and no ground truth: a sensor_msgs/NavSatFix topic '
                        "held against --estimate by the navsat bridge's data path "
                        '(--params-file: its parameter file, the datum required)')
    parser.add_argument('--innovation', metavar='TOPIC', action='append', default=[],
                        help='bags without ground truth: an innovation topic (Innovation or PX4 '
                        'EstimatorAidSource1d/2d/3d), repeatable, through the innovation '
                        "bridge's engine as with evaluate (--params-file: its parameter file)")


def default_policies() -> list[str]:
    """Return the policies audited without --policy: every registered one, the default first.

    The first policy's downgrades choose the robots the report draws.
    """
    from ..core.feedback import DEFAULT_POLICY, policy_names
    return [DEFAULT_POLICY] + [name for name in policy_names() if name != DEFAULT_POLICY]


def run(args: argparse.Namespace, fail: Callable[[object, int], int]) -> int:
    """Run the audit for parsed ``args``; ``fail(message, status)`` prints a one-line error."""
    from ..core.feedback import DEFAULT_MAX_HISTORY, parse_policy
    from ..core.loop import LoopConfig
    from ..core.window import DEFAULT_OUTCOME_BUFFER_SIZE
    from .discovery import find_bags, robot_name
    from .driver import run_audit
    from .injection import parse_injection
    from ..safe_io import check_output_dir, check_output_file
    from .report import build_document, dumps, write_report

    try:
        policies = [parse_policy(text) for text in (args.policies or default_policies())]
        injection = parse_injection(args.inject, args.seed) if args.inject else None
        security = _check_engine(args)
        if args.json:
            check_output_file(args.json, '--json')
        if args.report:
            check_output_dir(args.report, '--report')
    except (TypeError, ValueError) as error:
        return fail(error, 2)
    labels = [spec.label for spec in policies]
    if len(set(labels)) != len(labels):
        return fail('the same --policy is given twice', 2)
    max_history = args.max_history or DEFAULT_MAX_HISTORY
    try:  # the node's own validation (LoopConfig.make), before any bag is opened
        for spec in policies:
            LoopConfig.make(spec.name, dict(spec.parameters), max_history,
                            max(DEFAULT_OUTCOME_BUFFER_SIZE, max_history))
    except (TypeError, ValueError) as error:
        return fail(error, 2)
    bridge: Any = None
    if args.navsat_fix:
        from ..bridge_inputs import BagInputError
        from ..field_inputs import navsat_parameters, NavSatSource

        if args.reference or args.innovation or not args.estimate \
                or args.estimate == args.navsat_fix:
            return fail('--navsat-fix TOPIC goes with --estimate TOPIC (another topic), without '
                        '--reference and --innovation', 2)
        try:
            bridge = NavSatSource(args.estimate, args.navsat_fix,
                                  navsat_parameters(args.params_file))
        except BagInputError as error:
            return fail(error, 2)
    elif args.innovation:
        from ..bridge_inputs import BagInputError
        from ..field_inputs import innovation_parameters

        if args.estimate or args.reference:
            return fail('--innovation goes without --estimate and --reference', 2)
        try:
            bridge = (tuple(args.innovation), innovation_parameters(args.params_file))
        except BagInputError as error:
            return fail(error, 2)
    elif args.estimate or args.reference or args.params_file or args.tf_topics:
        from ..bridge_inputs import BagInputError, bridge_parameters, tf_topics_option

        if not (args.estimate and args.reference):
            return fail('--estimate and --reference go together (ordinary bags)', 2)
        try:
            bridge = (args.estimate, args.reference, bridge_parameters(args.params_file),
                      tf_topics_option(args.tf_topics) if args.tf_topics else None)
        except (BagInputError, ValueError) as error:
            return fail(error, 2)
    bags, problems = find_bags(args.paths)
    for problem in problems:
        _note(problem)
    if not bags:
        return fail('no bag to audit', 2)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM cleans up as Ctrl-C does
    try:
        results = run_audit(bags, policies, max_history=max_history, injection=injection,
                            scheduler=args.scheduler, workers=args.workers,
                            progress=not args.no_progress, security=security, bridge=bridge)
    except Exception as error:  # noqa: BLE001 - the scheduler cannot be reached, or answers junk
        return fail(f'dask: {type(error).__name__}: {error}', 2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if bridge is None and results and all(r.get('not_telemetry') for r in results):
        # Only ordinary bags and no --estimate: one line with the way out, not a table of zeros.
        return fail(f'{results[0]["error"]}' if len(results) == 1 else
                    f'none of the {len(results)} bags holds a BeliefSelfAssessment (ordinary '
                    f'bags?), e.g. {results[0]["error"]}', 2)
    for result in results:
        result['robot'] = robot_name(result['bag'], args.robot_name_from)
    engine = {'scheduler': args.scheduler or 'LocalCluster', 'workers': args.workers,
              'security': 'tls' if security is not None or not args.scheduler else 'none'}
    document = build_document(results, policies=policies, max_history=max_history,
                              injection=injection, problems=problems, engine=engine)
    for item in document['failed']:
        _note(f'{item["bag"]}: failed: {item["error"]}')
    _print_summary(document, sys.stderr if args.json == '-' else sys.stdout)
    try:
        _write_outputs(args, document, dumps, write_report)
    except (OSError, ValueError) as error:
        return fail(f'cannot write the results: {error}', 2)
    return 1 if document['failed'] or problems else 0


def _note(text: str) -> None:
    """Print ``ghost-feedback: audit: <text>`` on one line (escaped) on stderr."""
    from ..safe_io import terminal_text

    print(f'ghost-feedback: audit: {" ".join(terminal_text(text).split())}', file=sys.stderr)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _check_engine(args: argparse.Namespace) -> Any:
    """Check --scheduler, --tls-* and --workers; return the dask Security for tls:// or None."""
    tls = {'--tls-ca-file': args.tls_ca_file, '--tls-cert': args.tls_cert,
           '--tls-key': args.tls_key}
    given = [name for name, value in tls.items() if value]
    scheduler = args.scheduler
    if scheduler and not _SCHEDULER.match(scheduler):
        raise ValueError(f'--scheduler {scheduler!r}: expected tls://HOST:PORT or tcp://HOST:PORT')
    if given and not (scheduler or '').startswith('tls://'):
        raise ValueError(f'{given[0]} goes with --scheduler tls://HOST:PORT')
    cores = os.cpu_count() or 1
    if args.workers and args.workers > WORKERS_PER_CORE * cores and not args.no_worker_limit:
        raise ValueError(f'--workers {args.workers}: more than {WORKERS_PER_CORE} per core '
                         f'({cores} cores); add --no-worker-limit to run them anyway')
    if not scheduler:
        return None
    if scheduler.startswith('tls://'):
        missing = [name for name, value in tls.items() if not value]
        if missing:
            raise ValueError(f'--scheduler tls:// needs {", ".join(missing)}')
        for name, value in tls.items():
            if not os.path.isfile(value) or not os.access(value, os.R_OK):
                raise ValueError(f'{name} {value}: not a readable file')
        from .driver import scheduler_security

        return scheduler_security(args.tls_ca_file, args.tls_cert, args.tls_key)
    from .driver import is_loopback

    if not is_loopback(scheduler):
        _note(f'warning: {scheduler} is plain tcp: anyone who can reach the scheduler can run '
              'code on its workers and in this process; use tls:// with --tls-* files')
    return None


def _write_outputs(args: argparse.Namespace, document: Mapping[str, Any],
                   dumps: Callable[[Mapping[str, Any]], str],
                   write_report: Callable[[Mapping[str, Any], str], list[str]]) -> None:
    """Write --json and --report (OSError / ValueError on a write error)."""
    if args.json == '-':
        print(dumps(document))
        sys.stdout.flush()
    elif args.json:
        with open(args.json, 'w', encoding='utf-8') as stream:
            stream.write(dumps(document) + '\n')
    if args.report:
        existed = os.path.exists(args.report)
        try:
            page = write_report(document, args.report)[0]
        except BaseException:
            if not existed:  # no half-written report left behind
                shutil.rmtree(args.report, ignore_errors=True)
            raise
        print(f'report: {page}', file=sys.stderr)


def _print_summary(document: Mapping[str, Any], stream: IO[str]) -> None:
    from .report import windows_key

    injected_run = document['config'].get('injection') is not None
    lines = [f'audited {document["bags_audited"]} bags ({document["bags_failed"]} failed)']
    header = (f'{"policy":44} {"assessments":>11} {"downgrades":>10} {"episodes":>8} '
              f'{"before inj./window" if injected_run else "downgraded/window":>18}')
    if injected_run:
        header += f' {"detected":>9} {"fault before":>12} {"median delay":>12}'
    lines.append(header)
    for label, total in document['totals'].items():
        key = windows_key(total)
        rate = total[key]['false_downgrade_rate' if key == 'untouched' else 'downgrade_rate']
        line = (f'{label[:44]:44} {total["assessments"]:>11} {total["downgrades"]:>10} '
                f'{total["episodes"]:>8} {"-" if rate is None else f"{100 * rate:.2f}%":>18}')
        injected = total.get('injected')
        if injected_run:
            detected = (f'{injected["detected"]}/{injected["calibrated_bags"]}' if injected
                        else '-')
            before = str(injected['fault_before_injection']) if injected else '-'
            delay = injected['median_delay_s'] if injected else None
            line += (f' {detected:>9} {before:>12} '
                     f'{"-" if delay is None else f"{delay:.2f} s":>12}')
        lines.append(line)
    print('\n'.join(lines), file=stream)


def build(commands: Any, positive_int: Callable[[str], int],
          fail: Callable[[object, int], int]) -> argparse.ArgumentParser:
    """Register the ``audit`` subcommand on ``commands`` (argparse subparsers)."""
    parser = commands.add_parser(
        'audit', help='replay many bags under many policies on dask; JSON and HTML report',
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser, positive_int)
    parser.set_defaults(handler=lambda args: run(args, fail))
    return parser
