# SPDX-License-Identifier: Apache-2.0
"""``ghost-feedback audit PATH... [options]``: the command-line glue of the fleet audit.

Exit status: 0 every bag audited; 1 the audit ran but some bags failed (each with its one-line
reason on stderr and in the JSON); 2 usage error or no bag to audit.
"""

import argparse
import re
import sys

DESCRIPTION = """\
Replay every telemetry bag found under PATH... under every --policy, in parallel on
dask.distributed (an embedded LocalCluster of --workers processes bound to 127.0.0.1, or the
cluster at --scheduler, whose workers must see the same paths), and report per bag and policy:
assessments, time per level, downgrades, first downgrade, level transitions; with --inject, the
detection delay of a fault injected into the recorded outcomes, and the false-downgrade rate on
the untouched stretch. A bag that fails is reported with its reason; the audit goes on.
"""

_SCHEDULER = re.compile(r'^(tcp|tls)://[^/\s]+:\d+$')
DEFAULT_POLICIES = ('mahalanobis_downgrade', 'calibrated_exceedance', 'bucket_likelihood_ratio',
                    'overconfidence_scale')
"""Every registered policy (the node's default, ``overconfidence_scale``, included)."""


def add_arguments(parser, positive_int):
    """Add the audit's arguments to ``parser``."""
    parser.add_argument('paths', metavar='PATH', nargs='+',
                        help='bag directories, or directories to search for bags')
    parser.add_argument(
        '--policy', dest='policies', metavar='NAME[:k=v,...]', action='append', default=[],
        help='a policy and its parameters (repeatable; default: all registered policies, '
        'e.g. calibrated_exceedance:false_alarm_probability=0.01)')
    parser.add_argument('--max-history', metavar='N', type=positive_int, default=None,
                        help='outcomes per calibration window (default 32)')
    parser.add_argument('--scheduler', metavar='tcp://HOST:PORT',
                        help='an existing dask scheduler (default: an embedded LocalCluster)')
    parser.add_argument('--workers', metavar='N', type=positive_int,
                        help='LocalCluster worker processes (default: the number of cores)')
    parser.add_argument(
        '--inject', metavar='K[@T]',
        help='multiply recorded distances and errors by K from T s after each bag start '
        '(default 0), or from a seeded random instant with K@random --seed S')
    parser.add_argument('--seed', type=int, help='seed of K@random injection instants')
    parser.add_argument('--json', metavar='OUT', help='write the JSON document to OUT (- = stdout)')
    parser.add_argument('--report', metavar='DIR',
                        help='write the HTML report (index.html + PNGs) into DIR')
    parser.add_argument('--no-progress', action='store_true', help='no progress bar on stderr')
    from ..evaluate.command import add_input_arguments

    add_input_arguments(parser, " (ordinary bags: their outcomes come from the bridge's engine, "
                                'as with evaluate)')


def run(args, fail):
    """Run the audit for parsed ``args``; ``fail(message, status)`` prints a one-line error."""
    from ..core.feedback import DEFAULT_MAX_HISTORY
    from .discovery import find_bags
    from .driver import run_audit
    from .injection import parse_injection
    from .report import build_document, dumps, write_report
    from .task import parse_policy

    try:
        policies = [parse_policy(text) for text in (args.policies or DEFAULT_POLICIES)]
        injection = parse_injection(args.inject, args.seed) if args.inject else None
    except (TypeError, ValueError) as error:
        return fail(error, 2)
    if args.scheduler and not _SCHEDULER.match(args.scheduler):
        return fail(f'--scheduler {args.scheduler!r}: expected tcp://HOST:PORT', 2)
    labels = [spec.label for spec in policies]
    if len(set(labels)) != len(labels):
        return fail('the same --policy is given twice', 2)
    max_history = args.max_history or DEFAULT_MAX_HISTORY
    bridge = None
    if args.estimate or args.reference or args.params_file:
        from ..evaluate.inputs import bridge_parameters, EvaluateError

        if not (args.estimate and args.reference):
            return fail('--estimate and --reference go together (ordinary bags)', 2)
        try:
            bridge = (args.estimate, args.reference, bridge_parameters(args.params_file))
        except EvaluateError as error:
            return fail(error, 2)
    bags, problems = find_bags(args.paths)
    for problem in problems:
        print(f'ghost-feedback: audit: {problem}', file=sys.stderr)
    if not bags:
        return fail('no bag to audit', 2)
    try:
        results = run_audit(bags, policies, max_history=max_history, injection=injection,
                            scheduler=args.scheduler, workers=args.workers,
                            progress=not args.no_progress, bridge=bridge)
    except (OSError, ValueError) as error:  # e.g. the scheduler cannot be reached
        return fail(f'dask: {error}', 2)
    engine = {'scheduler': args.scheduler or 'LocalCluster', 'workers': args.workers}
    document = build_document(results, policies=policies, max_history=max_history,
                              injection=injection, problems=problems, engine=engine)
    for item in document['failed']:
        print(f'ghost-feedback: audit: {item["bag"]}: failed: {item["error"]}', file=sys.stderr)
    _print_summary(document, sys.stderr if args.json == '-' else sys.stdout)
    if args.json == '-':
        print(dumps(document))
    elif args.json:
        with open(args.json, 'w', encoding='utf-8') as stream:
            stream.write(dumps(document) + '\n')
    if args.report:
        page = write_report(document, args.report)[0]
        print(f'report: {page}', file=sys.stderr)
    return 1 if document['failed'] or problems else 0


def _print_summary(document, stream):
    lines = [f'audited {document["bags_audited"]} bags ({document["bags_failed"]} failed)']
    lines.append(f'{"policy":52} {"assessments":>11} {"downgrades":>10} {"false/window":>12} '
                 f'{"detected":>9} {"median delay":>12}')
    for label, total in document['totals'].items():
        rate = total['untouched']['false_downgrade_rate']
        injected = total.get('injected')
        detected = f'{injected["detected"]}/{injected["bags"]}' if injected else '-'
        delay = injected['median_delay_s'] if injected else None
        lines.append(
            f'{label[:52]:52} {total["assessments"]:>11} {total["downgrades"]:>10} '
            f'{"-" if rate is None else f"{100 * rate:.2f}%":>12} {detected:>9} '
            f'{"-" if delay is None else f"{delay:.2f} s":>12}')
    print('\n'.join(lines), file=stream)


def build(commands, positive_int, fail):
    """Register the ``audit`` subcommand on ``commands`` (argparse subparsers)."""
    parser = commands.add_parser(
        'audit', help='replay many bags under many policies on dask; JSON and HTML report',
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser, positive_int)
    parser.set_defaults(handler=lambda args: run(args, fail))
    return parser
