# SPDX-License-Identifier: Apache-2.0
"""Fleet audit (``ghost-feedback audit``) on a real dask.distributed LocalCluster.

Bags are generated with the project's own recorder (the feedback node's TelemetryRecorder), so
they follow the message definitions of this build. The cluster has two worker processes bound to
127.0.0.1, one thread each, no dashboard; it is shared by the tests of this module.

- Every bag's per-policy figures equal ``replay_bag(path, policy=...)``'s recomputed summary.
- A failing bag among good ones (no metadata.yaml, truncated storage, missing path) is reported
  with a one-line reason, in bag order; the good ones are audited.
- Injection: a known K on calibrated traffic is detected by every policy, within the delay the
  policy's own thresholds allow (computed from the core on the least suspicious window); random
  instants are seeded and per bag.
- The JSON document follows its schema; the CLI writes it and a self-contained HTML report.
"""

import base64
import gc
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from dask.distributed import Client, Security
from project_ghost_feedback.audit import (
    AUDIT_SCHEMA_VERSION,
    audit_bag,
    build_document,
    find_bags,
    parse_injection,
    run_audit,
    write_report,
)
from project_ghost_feedback.audit.driver import local_cluster
from project_ghost_feedback.audit.task import EPISODE_LIMIT
from project_ghost_feedback.audit.synthetic import write_bag, write_fleet
from project_ghost_feedback.core import (
    BeliefSelfAssessment,
    PredictionOutcome,
    SelfAssessmentLevel,
)
from project_ghost_feedback.core.feedback import assess_with_feedback, parse_policy
from project_ghost_feedback.telemetry import (
    Channel,
    read_bag,
    replay_bag,
    TelemetryWriter,
    to_telemetry,
    TYPE_BELIEF_SELF_ASSESSMENT,
    TYPE_PREDICTION_OUTCOME,
)
import psutil
import pytest

CLI = [sys.executable, '-m', 'project_ghost_feedback.cli']
POLICIES = ('mahalanobis_downgrade', 'calibrated_exceedance', 'bucket_likelihood_ratio',
            'calibrated_exceedance:false_alarm_probability=0.02')
MAX_HISTORY = 32
ASSESSMENTS = 240


@pytest.fixture(scope='module')
def client():
    cluster = local_cluster(2)
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope='module')
def fleet(tmp_path_factory):
    """Three calibrated robots and one that turns 10x overconfident at 60% of its run."""
    root = tmp_path_factory.mktemp('fleet')
    bags = write_fleet(root / 'site_a', 3, assessments=ASSESSMENTS, seed=11)
    bags.append(write_bag(root / 'site_b' / 'robot_faulty', seed=5, assessments=ASSESSMENTS,
                          overconfidence=10.0, fault_at=0.6))
    return root, [str(b) for b in bags]


def _specs(names=POLICIES):
    return [parse_policy(name) for name in names]


def test_cluster_listens_on_loopback_only(client):
    pids = [os.getpid()] + list(client.run(os.getpid).values())
    assert len(pids) == 3
    listening = [c for c in psutil.net_connections(kind='inet')
                 if c.status == psutil.CONN_LISTEN and c.pid in pids]
    assert len(listening) >= 3  # scheduler + its HTTP routes, each worker
    assert {c.laddr.ip for c in listening} == {'127.0.0.1'}
    assert set(client.nthreads().values()) == {1}


def test_discovery_finds_every_bag_and_reports_empty_paths(fleet, tmp_path):
    root, bags = fleet
    found, problems = find_bags([root, bags[0], tmp_path, tmp_path / 'missing'])
    assert sorted(map(str, found)) == sorted(bags)
    assert len(problems) == 2
    assert 'no bag found' in problems[0] and 'no such directory' in problems[1]


def test_results_equal_per_bag_replay(client, fleet):
    _, bags = fleet
    specs = _specs()
    results = run_audit(bags, specs, max_history=MAX_HISTORY, client=client, progress=False)
    assert [r['bag'] for r in results] == bags
    faulty_downgrades = 0
    for result in results:
        assert result['ok'], result
        assert result['assessments'] == ASSESSMENTS
        for spec in specs:
            figures = result['policies'][spec.label]
            report = replay_bag(result['bag'], policy=spec.name,
                                parameters=dict(spec.parameters), max_history=MAX_HISTORY)
            expected = report.recomputed
            assert figures['assessments'] == expected.assessments == ASSESSMENTS
            assert figures['levels'] == expected.levels
            assert figures['downgrades'] == expected.downgrades
            assert figures['first_downgrade_stamp_sim_ns'] == \
                expected.first_downgrade_stamp_sim_ns
            assert sum(figures['time_per_level_s'].values()) == pytest.approx(
                (ASSESSMENTS - 1) / 10.0)
            assert figures['transitions'] == len(figures['timeline']) - 2 or \
                figures['transitions'] == len(figures['timeline']) - 1
            # The episodes: the same core tracker over the same loop, as replay reports them
            # (the audit keeps the EPISODE_LIMIT longest of a flapping policy).
            everyone = report.to_dict()['recomputed']['episodes']
            assert figures['episode_count'] == len(everyone)
            if not figures['episodes_truncated']:
                assert figures['episodes'] == everyone
            else:
                kept = figures['episodes']
                assert len(kept) == EPISODE_LIMIT and all(e in everyone for e in kept)
                dropped = [e for e in everyone if e not in kept]
                assert min(e['duration_s'] for e in kept) >= max(
                    e['duration_s'] for e in dropped)
        # ADR-0026a: the overconfidence estimate of the last window, as replay reports it.
        last_window = result['overconfidence_last_window']
        assert last_window == report.to_dict()['recomputed']['final_overconfidence']
        assert set(last_window) == {'position', 'orientation'}
        assert result['overconfidence_over_run']['outcomes'] == result['outcomes']
        if result['robot'] == 'robot_faulty':
            faulty_downgrades = result['policies']['calibrated_exceedance']['downgrades']
    assert faulty_downgrades > 0.3 * ASSESSMENTS  # the 10x stretch is 40% of the run


def test_results_through_scheduler_address_equal_embedded(client, fleet):
    _, bags = fleet
    specs = _specs(POLICIES[:2])
    via_address = run_audit(bags[:2], specs, max_history=16,
                            scheduler=client.scheduler.address, progress=False,
                            security=client.security)
    direct = [audit_bag(bag, specs, max_history=16) for bag in bags[:2]]
    assert via_address == direct


def test_namespaced_inputs_only_bag_audits_like_the_node_bag(fleet, tmp_path):
    """A `ros2 bag record` style bag: /robot7/... input topics only, no calibrated output."""
    _, bags = fleet
    path = tmp_path / 'robot7'
    channels = (Channel('/robot7/prediction_outcome', TYPE_PREDICTION_OUTCOME),
                Channel('/robot7/self_assessment/raw', TYPE_BELIEF_SELF_ASSESSMENT))
    topic = {'/prediction_outcome': channels[0].topic, '/self_assessment/raw': channels[1].topic}
    written = 0
    with TelemetryWriter(path, channels=channels) as writer:
        for _, _, _, contract in read_bag(bags[3]):
            if isinstance(contract, (PredictionOutcome, BeliefSelfAssessment)):
                record = to_telemetry(contract)
                writer.write(record._replace(channel=topic[record.channel]))
                written += 1
    assert written == sum(writer.counts.values()) > ASSESSMENTS
    specs = _specs()
    expected = audit_bag(bags[3], specs)
    result = audit_bag(path, specs)
    assert result['ok'] and result['robot'] == 'robot7'
    assert result['policies'] == expected['policies'] and result['raw'] == expected['raw']


def test_failing_bags_are_reported_and_the_audit_goes_on(client, fleet, tmp_path):
    _, bags = fleet
    no_metadata = tmp_path / 'no_metadata'
    shutil.copytree(bags[0], no_metadata)
    os.remove(no_metadata / 'metadata.yaml')
    truncated = tmp_path / 'truncated'
    shutil.copytree(bags[1], truncated)
    (mcap,) = truncated.glob('*.mcap')
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size // 2])
    order = [bags[0], str(no_metadata), bags[2], str(truncated), str(tmp_path / 'missing')]
    results = run_audit(order, _specs(POLICIES[1:2]), max_history=MAX_HISTORY, client=client,
                        progress=False)
    assert [r['bag'] for r in results] == order
    assert [r['ok'] for r in results] == [True, False, True, False, False]
    for result in results[1::2] + results[4:]:
        assert '\n' not in result['error'] and result['bag'] in result['error']
    assert 'metadata.yaml' in results[1]['error']
    document = build_document(results, policies=_specs(POLICIES[1:2]), max_history=MAX_HISTORY)
    assert document['bags_audited'] == 2 and document['bags_failed'] == 3
    assert document['totals']['calibrated_exceedance']['bags'] == 2


def _max_delay_outcomes(spec, max_history=MAX_HISTORY, factor=50.0):
    """Return the fewest outcomes at ``factor`` x d=0.5 after which ``spec`` downgrades.

    The rest of the window is within 1 std (the least suspicious bucket for every policy), so
    on any recorded window the policy downgrades no later than this: its exact figure.
    """
    policy = spec.make()
    raw = BeliefSelfAssessment(10**12, SelfAssessmentLevel.KNOWN)

    def outcome(i, distance):
        return PredictionOutcome(i * 10**6, i * 10**6 + 1, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0),
                                 distance, distance)

    for m in range(1, max_history + 1):
        window = [outcome(i, 0.5) for i in range(max_history - m)]
        window += [outcome(max_history + i, 0.5 * factor) for i in range(m)]
        calibrated = assess_with_feedback(raw, window, policy, max_history)
        if calibrated.adjusted_overall_level < raw.overall_level:
            return m
    raise AssertionError(f'{spec.label} never downgrades {factor}x')


def test_injection_is_detected_within_each_policy_exact_delay(client, fleet):
    _, bags = fleet
    specs = _specs()
    injection = parse_injection('50@15')
    calibrated = bags[:3]
    results = run_audit(calibrated, specs, max_history=MAX_HISTORY, injection=injection,
                        client=client, progress=False)
    for result in results:
        start = result['start_time_ns']
        assert result['injection_stamp_sim_ns'] == start + 15 * 10**9
        stamps = [c.belief_stamp_sim_ns for _, _, _, c in read_bag(result['bag'])
                  if isinstance(c, BeliefSelfAssessment)]
        before = sum(1 for s in stamps if s < result['injection_stamp_sim_ns'])
        for spec in specs:
            figures = result['policies'][spec.label]
            injected = figures['injected']
            assert injected['detected'], (result['bag'], spec.label)
            assert 0.0 <= injected['delay_s'] <= 1.0
            if not injected['downgraded_before_injection']:
                assert 1 <= injected['delay_outcomes'] <= _max_delay_outcomes(spec)
            assert figures['untouched']['assessments'] == before
            assert figures['untouched']['full_windows'] <= before
        exceedance = result['policies']['calibrated_exceedance']['injected']
        assert exceedance['level'] == 'UNKNOWN'  # one outcome beyond 5 std: k_g(32) = 1
    assert _max_delay_outcomes(specs[1]) == 1 and _max_delay_outcomes(specs[0]) == 2


def test_random_injection_points_are_seeded_per_bag(fleet):
    _, bags = fleet
    spec = _specs(POLICIES[1:2])
    first = [audit_bag(b, spec, injection=parse_injection('10@random', 7)) for b in bags[:3]]
    again = [audit_bag(b, spec, injection=parse_injection('10@random', 7)) for b in bags[:3]]
    other = [audit_bag(b, spec, injection=parse_injection('10@random', 8)) for b in bags[:3]]
    stamps = [r['injection_stamp_sim_ns'] for r in first]
    assert stamps == [r['injection_stamp_sim_ns'] for r in again]
    assert stamps != [r['injection_stamp_sim_ns'] for r in other]
    for result in first:
        span = result['end_time_ns'] - result['start_time_ns']
        offset = result['injection_stamp_sim_ns'] - result['start_time_ns']
        assert 0.25 * span <= offset <= 0.75 * span
    with pytest.raises(ValueError, match='--seed'):
        parse_injection('10@random')
    for bad in ('0', 'x@3', '2@-1', 'nan'):
        with pytest.raises(ValueError):
            parse_injection(bad)


def test_default_policy_set_is_every_policy_the_default_first():
    from project_ghost_feedback.audit.command import default_policies
    from project_ghost_feedback.core.feedback import DEFAULT_POLICY, policy_names
    names = default_policies()
    assert names[0] == DEFAULT_POLICY == 'vec3_scale'
    assert sorted(names) == policy_names()


def test_policy_parsing():
    spec = parse_policy('calibrated_exceedance:false_alarm_probability=0.01')
    assert spec.parameters == (('false_alarm_probability', 0.01),)
    assert spec.label == 'calibrated_exceedance(false_alarm_probability=0.01)'
    for bad in ('nope', 'calibrated_exceedance:bogus=1', 'calibrated_exceedance:x',
                'mahalanobis_downgrade:downgrade_threshold=abc'):
        with pytest.raises(ValueError):
            parse_policy(bad)


def _check_schema(document):
    """Check the audit document's schema (keys and types), version 2."""
    assert document['schema_version'] == AUDIT_SCHEMA_VERSION == 2
    assert document['kind'] == 'ghost_feedback_audit'
    config = document['config']
    assert isinstance(config['max_history'], int)
    labels = [p['label'] for p in config['policies']]
    for item in document['failed']:
        assert set(item) == {'bag', 'error'}
    levels = {'KNOWN', 'UNCERTAIN', 'UNKNOWN'}
    for label, total in document['totals'].items():
        assert label in labels
        assert set(total['levels']) == levels and set(total['time_per_level_s']) == levels
        for key in ('bags', 'assessments', 'downgrades', 'bags_with_downgrades', 'transitions'):
            assert isinstance(total[key], int)
        if config.get('injection') is not None:
            assert set(total['untouched']) >= {'full_windows', 'independent_windows',
                                               'false_downgrade_rate'}
        else:
            assert set(total['windows']) >= {'full_windows', 'independent_windows',
                                             'downgrade_rate'}
    for bag in document['bags']:
        assert bag['ok'] is True
        for key in ('bag', 'robot', 'outcomes', 'assessments', 'raw', 'distances', 'policies'):
            assert key in bag
        assert set(bag['policies']) == set(labels)
        for figures in bag['policies'].values():
            for key in ('assessments', 'levels', 'time_per_level_s', 'downgrades',
                        'first_downgrade_stamp_sim_ns', 'transitions', 'timeline', 'episodes',
                        'episode_count', 'downgraded_s'):
                assert key in figures
            assert ('untouched' in figures) == (config.get('injection') is not None)
            for stamp, level in figures['timeline']:
                assert isinstance(stamp, int) and level in levels
            if config.get('injection') is not None:
                assert {'detected', 'downgraded_before_injection'} <= set(figures['injected'])
    assert 'empirical' in document['notes'][0]


def test_cli_writes_json_and_report(client, fleet, tmp_path):
    root, _ = fleet
    broken = tmp_path / 'broken'
    broken.mkdir()
    (broken / 'broken.mcap').write_bytes(b'not an mcap file')
    out = tmp_path / 'audit.json'
    report = tmp_path / 'report'
    assert client.scheduler.address.startswith('tls://')
    result = subprocess.run(
        CLI + ['audit', str(root), str(broken), '--policy', 'calibrated_exceedance',
               '--policy', 'mahalanobis_downgrade:downgrade_threshold=3',
               '--scheduler', client.scheduler.address, '--inject', '10@random', '--seed', '3',
               '--json', str(out), '--report', str(report)] + _tls_options(client, tmp_path),
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr  # one bag failed, the others were audited
    assert 'Traceback' not in result.stderr
    failed = [line for line in result.stderr.splitlines() if 'failed:' in line]
    assert len(failed) == 1 and str(broken) in failed[0]
    assert 'audited 4 bags (1 failed)' in result.stdout
    document = json.loads(out.read_text())
    _check_schema(document)
    assert document['bags_audited'] == 4 and document['failed'][0]['bag'] == str(broken)
    assert document['config']['injection']['seed'] == 3
    faulty = [b for b in document['bags'] if b['robot'] == 'robot_faulty'][0]
    assert faulty['policies']['calibrated_exceedance']['injected']['detected']
    page = (report / 'index.html').read_text()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 2
    import matplotlib.image

    for data, name in zip(images, ('timelines.png', 'distances.png')):
        raw = base64.b64decode(data)
        assert raw == (report / name).read_bytes()
        assert matplotlib.image.imread(io.BytesIO(raw), format='png').shape[0] > 100
    assert 'calibrated_exceedance' in page and str(broken) in page
    assert '<td>robot_faulty</td>' in page
    assert not re.search(r'(src|href)="(?!data:)', page)  # self-contained: nothing to fetch


def _tls_options(client, directory):
    """Write the cluster's temporary credentials to PEM files; return the --tls-* options."""
    security = client.security
    options = []
    for option, pem in (('--tls-ca-file', security.tls_ca_file),
                        ('--tls-cert', security.tls_client_cert),
                        ('--tls-key', security.tls_client_key)):
        path = directory / f'{option[2:]}.pem'
        path.write_text(pem)
        options += [option, str(path)]
    return options


def test_cli_usage_errors_are_one_line(tmp_path):
    (tmp_path / 'file').write_text('x')
    for args, text in ((['--policy', 'nope'], 'unknown policy'),
                       (['--inject', '2@random'], '--seed'),
                       (['--scheduler', 'localhost'], 'tcp://HOST:PORT'),
                       (['--inject', '10@1e300'], 'range of a nanosecond stamp'),
                       (['--inject', '1e300'], 'K must be'),
                       (['--workers', '100000'], '--no-worker-limit'),
                       (['--report', str(tmp_path / 'file')], 'not a directory'),
                       (['--json', str(tmp_path / 'missing' / 'a.json')], 'does not exist'),
                       (['--json', str(tmp_path)], 'is a directory'),
                       (['--tls-cert', 'c.pem'], 'goes with --scheduler tls://'),
                       (['--scheduler', 'tls://127.0.0.1:1'], 'needs --tls-ca-file'),
                       ([], 'no bag to audit')):
        result = subprocess.run(CLI + ['audit', str(tmp_path)] + args, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 2
        assert text in result.stderr.splitlines()[-1] and 'Traceback' not in result.stderr


def test_embedded_local_cluster_and_report_of_empty_fleet(fleet, tmp_path):
    _, bags = fleet
    results = run_audit(bags[:1], _specs(POLICIES[1:2]), max_history=MAX_HISTORY, workers=1,
                        progress=False)
    assert results == [audit_bag(bags[0], _specs(POLICIES[1:2]), max_history=MAX_HISTORY)]
    document = build_document([], policies=_specs(POLICIES[1:2]), max_history=MAX_HISTORY)
    paths = write_report(document, tmp_path / 'empty')
    assert [os.path.basename(p) for p in paths] == ['index.html']


def test_cli_help_lists_the_options_and_imports_no_engine():
    result = subprocess.run(CLI + ['audit', '--help'], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for option in ('--policy', '--max-history', '--scheduler', '--workers', '--inject', '--seed',
                   '--json', '--report'):
        assert option in result.stdout
    code = ('import sys; from project_ghost_feedback.cli import build_parser; build_parser(); '
            'print(sorted(m for m in ("dask", "distributed", "matplotlib", "tqdm") '
            'if m in sys.modules))')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.strip() == '[]', result.stderr  # the other commands stay light


def _copies(fleet, directory, count):
    """``count`` copies of the fleet's bags under ``directory`` (a longer audit)."""
    _, bags = fleet
    for index in range(count):
        shutil.copytree(bags[index % len(bags)], directory / f'robot_{index:03d}')
    return directory


def _listening_ports(pid):
    try:
        processes = [psutil.Process(pid)] + psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return set()
    pids = {p.pid for p in processes}
    return {c.laddr.port for c in psutil.net_connections(kind='inet')
            if c.status == psutil.CONN_LISTEN and c.pid in pids}


def _start_audit(arguments, tmp_path):
    """Start the CLI audit in its own session with TMPDIR in tmp_path; wait for its ports."""
    scratch = tmp_path / 'tmp'
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    process = subprocess.Popen(CLI + ['audit'] + arguments, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    ports = set()
    while not ports and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        ports = _listening_ports(process.pid)
    return process, ports, scratch


def _session_alive(session):
    alive = []
    for process in psutil.process_iter(['pid', 'status']):
        try:
            if (os.getsid(process.pid) == session
                    and process.info['status'] != psutil.STATUS_ZOMBIE):
                alive.append(process.pid)
        except (ProcessLookupError, psutil.Error):
            pass
    return alive


def _touch(path):
    with open(path, 'w') as stream:
        stream.write('ran')
    return True


def _collect_refused():
    """Collect refused Clients now (their holders dropped first), outside any Client's start.

    A refused ``Client`` is reachable from its exception's traceback; when the garbage collector
    finds it later, its ``__del__`` closes its loop under distributed's class-wide LoopRunner
    lock, and if that collection falls inside the next ``Client(...)``'s own ``LoopRunner.start``
    (which holds the lock) the thread waits on itself: one full run hung there (py-spy:
    ``Client.__del__`` -> ``LoopRunner.stop`` under ``Client.__init__`` -> ``LoopRunner.start``).
    """
    gc.collect()


def test_a_client_without_the_credentials_is_refused(fleet, tmp_path):
    """The audit's own cluster: a client without its credentials cannot connect or run a task.

    The cluster is the one ``run_audit`` starts (``local_cluster``); an intruder tries the
    scheduler's address over plain TCP, over TLS without credentials and with credentials of its
    own, then the audit runs through the legitimate client.
    """
    _, bags = fleet
    marker = tmp_path / 'marker'
    cluster = local_cluster(1)
    owner = Client(cluster)
    try:
        address = cluster.scheduler_address
        assert address.startswith('tls://127.0.0.1:')
        # The audit runs through its own client first (the cluster works)...
        results = run_audit(bags[:1], _specs(POLICIES[:1]), max_history=MAX_HISTORY,
                            client=owner, progress=False)
        assert results[0]['ok']
        # ...then the intruders: refused, and their task never runs.
        port = address.rsplit(':', 1)[1]
        for target, security in ((f'tcp://127.0.0.1:{port}', None), (address, None),
                                 (address, Security.temporary())):
            with pytest.raises(Exception) as refused:  # noqa: B017 - reset, no TLS context, cert
                intruder = Client(target, timeout=5, security=security)
                try:
                    intruder.submit(_touch, str(marker), pure=False).result(timeout=10)
                finally:
                    intruder.close()
            del refused   # what holds the refused Client (and the last intruder, if any)
            intruder = None
            _collect_refused()
    finally:
        owner.close()
        cluster.close()
    assert not marker.exists()


def test_an_audit_completes_while_a_refused_client_is_the_process_default(client, fleet):
    """A failed ``Client()`` stays dask's default client while anything holds it.

    An intruder refused over TLS without credentials is left in state 'connecting' and is the
    process's default client as long as its exception is held (a traceback, a test's
    ``pytest.raises``). ``as_completed`` then watched the futures on that client's loop, which
    never sees them finish: the audit hung with idle workers (seen twice in full runs). The
    audit is run on a thread, its end waited for with a ceiling far above its ~1 s.
    """
    import threading

    from dask.distributed import default_client

    _, bags = fleet
    address = client.scheduler.address
    held = []
    for target, security in ((address, None), (address, Security.temporary())):
        try:
            Client(target, timeout=5, security=security)
        except Exception as error:  # noqa: BLE001 - refused, as intended
            held.append(error)
    assert len(held) == 2
    assert default_client() is not client  # the state that made as_completed hang
    results = []
    worker = threading.Thread(target=lambda: results.extend(run_audit(
        bags[:1], _specs(POLICIES[:1]), max_history=MAX_HISTORY, client=client,
        progress=False)), daemon=True)
    worker.start()
    worker.join(timeout=300)
    held.clear()
    _collect_refused()   # not in a later test's Client(...)
    assert not worker.is_alive(), 'the audit did not complete'
    assert results[0]['ok']


def test_ctrl_c_exits_130_and_leaves_nothing(fleet, tmp_path):
    """SIGINT to the process group (a Ctrl-C) after start-up: 130, one line, nothing left."""
    root = _copies(fleet, tmp_path / 'fleet', 40)
    process, ports, scratch = _start_audit([str(root), '--workers', '1'], tmp_path)
    assert ports and process.poll() is None
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    lines = [line for line in err.splitlines() if not line.startswith('audit:')]  # tqdm
    assert lines == ['ghost-feedback: error: interrupted'], err
    assert list(scratch.iterdir()) == []  # no scratch directory of the cluster
    deadline = time.monotonic() + 60   # the workers end on their own: wait for it, not 1 s
    while _session_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _session_alive(process.pid) == []  # no worker process


def test_write_errors_at_the_end_are_one_line(fleet, tmp_path):
    _, bags = fleet
    result = subprocess.run(CLI + ['audit', bags[0], '--workers', '1', '--no-progress',
                                   '--json', '/dev/full'],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        'ghost-feedback: error: cannot write the results: [Errno 28] No space left on device']


def test_robot_names_are_plain_text_in_the_report(client, fleet, tmp_path):
    """Directory names with $...$ and escape sequences: the report is written, no mathtext."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    import matplotlib.text

    from project_ghost_feedback.audit.report import timelines_png

    _, bags = fleet
    names = ['r$\\foo$', 'a$x$', 'e\x1b]0;T\x07']
    copies = []
    for name, bag in zip(names, bags):
        copies.append(str(shutil.copytree(bag, tmp_path / 'fleet' / name)))
    results = run_audit(copies, _specs(POLICIES[:1]), max_history=MAX_HISTORY, client=client,
                        progress=False)
    document = build_document(results, policies=_specs(POLICIES[:1]), max_history=MAX_HISTORY)
    assert sorted(b['robot'] for b in document['bags']) == sorted(names)
    write_report(document, tmp_path / 'report')
    assert (tmp_path / 'report' / 'index.html').exists()
    figures = []

    class KeepFigures:
        def __getattr__(self, name):
            return getattr(plt, name)

        def subplots(self, *args, **kwargs):
            figure, axes = plt.subplots(*args, **kwargs)
            figures.append(figure)
            return figure, axes

        def close(self, figure):
            pass

    timelines_png(document, KeepFigures())
    titles = [text for text in figures[0].findobj(matplotlib.text.Text)
              if text.get_text() in ('r$\\foo$', 'a$x$', 'e\\x1b]0;T\\x07')]
    assert len(titles) == 3 and not any(text.get_parse_math() for text in titles)
    plt.close(figures[0])
