# SPDX-License-Identifier: Apache-2.0
"""Seeded, bounded fuzz test of ``ghost-feedback info`` and ``replay`` over corrupted bags.

A small telemetry bag is recorded the way the node records one (core window and policy, the
node's recorder custom data); then corrupted copies of it (metadata.yaml edits of many classes,
byte damage of the MCAP, FIFOs in place of files, decompression bombs and size lies in the MCAP
chunks, control characters in names and custom data) are given to the real CLI. Every case must end
in exit 0 with the pristine bag's figures, exit 1 with a replay MISMATCH report, or exit 2 with
exactly one ``ghost-feedback: error:`` line on stderr and nothing on stdout; never a traceback.
All cases run in one child process bounded by a subprocess timeout (a hang fails the test);
FIFO cases run in their own child processes, also with a timeout, so a reader that opened one
would block and fail.
"""

import json
import os
import random
import shutil
import struct
import subprocess
import sys
import zlib

from project_ghost_feedback.core.loop import FeedbackLoop, LoopConfig
from project_ghost_feedback.core import BeliefSelfAssessment, NamedLevel, SelfAssessmentLevel
from project_ghost_feedback.sim.outcome_model import OutcomeModel
from project_ghost_feedback.telemetry.recorder import TelemetryRecorder
import pytest
import yaml
import zstandard

SEED = 20261203
CASES = 320
DRIVER_TIMEOUT_S = 600
FIFO_TIMEOUT_S = 60

# The child: runs the CLI in-process on every case directory listed on stdin, prints JSON.
DRIVER = r"""
import contextlib, io, json, sys, traceback
from project_ghost_feedback.cli import main
results = []
for line in sys.stdin:
    bag, command = json.loads(line)
    out, err = io.StringIO(), io.StringIO()
    crash = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([command, bag, '--json'])
        except SystemExit as exit:
            code = exit.code
        except BaseException:
            code, crash = None, traceback.format_exc()
    results.append({'bag': bag, 'command': command, 'code': code, 'stdout': out.getvalue(),
                    'stderr': err.getvalue(), 'crash': crash})
print(json.dumps(results))
"""


def _record(path):
    """Record a small bag as the node does; return its path."""
    config = LoopConfig.make('calibrated_exceedance', None, 16, 64)
    loop = FeedbackLoop(config)
    recorder = TelemetryRecorder(path, config)
    outcomes = OutcomeModel().outcomes(60, seed=SEED, overconfidence=3.0, rate_hz=10.0,
                                       start_stamp_sim_ns=10**9)
    levels = (NamedLevel('x', SelfAssessmentLevel.KNOWN),)
    for i, outcome in enumerate(outcomes):
        loop.outcome(outcome)
        recorder.record_outcome(outcome)
        if i == 30:  # a reset, so the event channel holds a message too
            recorder.record_event(loop.reset('service', 'fuzz', outcome.observed_stamp_sim_ns))
        if i % 2:
            raw = BeliefSelfAssessment(outcome.observed_stamp_sim_ns + 1,
                                       SelfAssessmentLevel.KNOWN, levels, ())
            recorder.record_assessment(raw, loop.assessment(raw).calibrated)
    recorder.close()
    return path


def _metadata(bag):
    return yaml.safe_load((bag / 'metadata.yaml').read_text())


def _write_metadata(bag, loaded):
    (bag / 'metadata.yaml').write_text(yaml.safe_dump(loaded, sort_keys=False))


def _mcap(bag):
    return next(bag.glob('*.mcap'))


def _info_of(loaded):
    return loaded['rosbag2_bagfile_information']


def _meta_edit(edit):
    def apply(bag, rng):
        loaded = _metadata(bag)
        edit(_info_of(loaded), rng)
        _write_metadata(bag, loaded)
    return apply


def _topic(info, rng):
    return rng.choice(info['topics_with_message_count'])


def _set_key(path, value):
    def edit(info, rng):
        target = info
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


def _drop_key(key):
    def edit(info, rng):
        info.pop(key, None)
    return edit


def _topic_edit(field, value):
    def edit(info, rng):
        topic = _topic(info, rng)
        if field == 'message_count':
            topic['message_count'] = value(topic['message_count'], rng)
        else:
            topic['topic_metadata'][field] = value
    return edit


def _damage(mode):
    def apply(bag, rng):
        path = _mcap(bag)
        data = bytearray(path.read_bytes())
        if mode == 'truncate':
            data = data[:rng.randrange(len(data))]
        elif mode == 'flip':
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif mode == 'zero_range':
            start = rng.randrange(8, len(data) - 8)
            length = rng.randint(1, 256)
            data[start:start + length] = bytes(len(data[start:start + length]))
        elif mode == 'random_range':
            start = rng.randrange(len(data))
            length = rng.randint(1, 64)
            data[start:start + length] = bytes(rng.randrange(256) for _ in range(length))
        elif mode == 'append':
            data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 512)))
        path.write_bytes(bytes(data))
    return apply


def _yaml_damage(mode):
    def apply(bag, rng):
        path = bag / 'metadata.yaml'
        data = bytearray(path.read_bytes())
        if mode == 'truncate':
            data = data[:rng.randrange(len(data))]
        elif mode == 'flip':
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif mode == 'huge':
            data += b'#' * (2 << 20)
        elif mode == 'deep':
            data = b'rosbag2_bagfile_information: ' + b'[' * 200_000 + b']' * 200_000
        elif mode == 'aliases':
            lines = [b'a0: &a0 [x, x, x, x, x, x, x, x, x, x]']
            lines += [b'a%d: &a%d [%s]' % (i, i, b', '.join([b'*a%d' % (i - 1)] * 10))
                      for i in range(1, 6)]
            data = b'\n'.join(lines) + b'\n' + data.replace(
                b'relative_file_paths:', b'relative_file_paths: *a5\n  unused:', 1)
        path.write_bytes(bytes(data))
    return apply


MCAP_MAGIC = b'\x89MCAP0\r\n'
BOMB_BYTES = 256 << 20
"""A bomb's padding: over every default limit, a few hundred kB compressed."""
RSS_CEILING_MB = 300
"""The memory ceiling of info / replay / audit on any bag of at most 1 MB (issue 22)."""
TERMINAL_PAYLOAD = '\x1b]0;TITLE\x07\x1b[31m'


def _record_bytes(opcode, body):
    return struct.pack('<BQ', opcode, len(body)) + body


def _mcap_records(data):
    position = len(MCAP_MAGIC)
    while position + 9 <= len(data) - len(MCAP_MAGIC):
        opcode, length = struct.unpack_from('<BQ', data, position)
        yield opcode, data[position + 9:position + 9 + length]
        position += 9 + length


def _rewrite_chunks(bag, edit):
    """Rewrite the bag's MCAP: every chunk's (size, crc, compression, data) from ``edit``.

    ``edit(records)`` gets the chunk's uncompressed records. The summary is dropped (readers
    scan the data section), the data-end CRC is 0 (not checked).
    """
    path = _mcap(bag)
    out = [MCAP_MAGIC]
    for opcode, body in _mcap_records(path.read_bytes()):
        if opcode == 0x06:
            start, end = struct.unpack_from('<QQ', body)
            name_length, = struct.unpack_from('<I', body, 28)
            compression = body[32:32 + name_length].decode()
            data_length, = struct.unpack_from('<Q', body, 32 + name_length)
            content = body[40 + name_length:40 + name_length + data_length]
            if compression == 'zstd':
                content = zstandard.decompress(content)
            size, crc, compression, stored = edit(content)
            name = compression.encode()
            body = (struct.pack('<QQQII', start, end, size, crc, len(name)) + name
                    + struct.pack('<Q', len(stored)) + stored)
        elif opcode == 0x0F:  # data end: no summary after it
            out += [_record_bytes(0x0F, struct.pack('<I', 0)),
                    _record_bytes(0x02, struct.pack('<QQI', 0, 0, 0))]
            break
        elif opcode not in (0x01, 0x03, 0x04, 0x05, 0x0C):
            continue
        out.append(_record_bytes(opcode, body))
    out.append(MCAP_MAGIC)
    path.write_bytes(b''.join(out))


def _zstd_padded(content, padding, content_size=True):
    """Return ``content`` + an unknown record of ``padding`` zero bytes, zstd (streamed)."""
    head = content + struct.pack('<BQ', 0x80, padding)
    compressor = zstandard.ZstdCompressor(write_content_size=content_size)
    if content_size:  # one-shot needs the whole input: give the size, stream the zeros
        writer = compressor.compressobj(size=len(head) + padding)
    else:
        writer = compressor.compressobj()
    parts = [writer.compress(head)]
    piece = bytes(1 << 20)
    for _ in range(padding // len(piece)):
        parts.append(writer.compress(piece))
    parts.append(writer.compress(bytes(padding % len(piece))))
    parts.append(writer.flush())
    return len(head) + padding, b''.join(parts)


def _bomb(padding=BOMB_BYTES, declared='true', content_size=True):
    """Return an edit: the chunk expands to its records + ``padding`` bytes (declared or not)."""
    def edit(content):
        size, stored = _zstd_padded(content, padding, content_size)
        return (size if declared == 'true' else len(content)), 0, 'zstd', stored

    return _chunk_edit(edit)


def _chunk_edit(edit):
    def apply(bag, rng):
        _rewrite_chunks(bag, edit)
    return apply


def _big_message(content):
    body = struct.pack('<HIQQ', 1, 0, 0, 0) + b'x' * (2 << 20)  # 2 MiB on channel 1
    padded = content + _record_bytes(0x05, body)
    return len(padded), zlib.crc32(padded), '', padded


def _huge_record_length(bag, rng):
    """Make the chunk record declare 2**40 bytes (the file holds far fewer)."""
    path = _mcap(bag)
    data = bytearray(path.read_bytes())
    position = len(MCAP_MAGIC)
    for opcode, body in _mcap_records(bytes(data)):
        if opcode == 0x06:
            data[position + 1:position + 9] = struct.pack('<Q', 1 << 40)
            break
        position += 9 + len(body)
    path.write_bytes(bytes(data))


def _custom(key, value):
    def edit(info, rng):
        info['custom_data'][key] = value
    return edit


CLASSES = {
    'empty_type': _meta_edit(_topic_edit('type', '')),
    'empty_name': _meta_edit(_topic_edit('name', '')),
    'type_not_string': _meta_edit(_topic_edit('type', 7)),
    'zstd_file': _meta_edit(lambda i, r: i.update(compression_format='zstd',
                                                  compression_mode='file')),
    'zstd_message': _meta_edit(lambda i, r: i.update(compression_format='zstd',
                                                     compression_mode='message')),
    'compression_bogus': _meta_edit(lambda i, r: i.update(compression_format='lz4',
                                                          compression_mode='FILE')),
    'custom_data_list': _meta_edit(_set_key(['custom_data'], ['a', 'b'])),
    'custom_data_nonstring': _meta_edit(_set_key(['custom_data'], {'a': 1})),
    'custom_bad_json': _meta_edit(_custom('ghost_feedback.policy_parameters', '{nope')),
    'custom_bad_policy': _meta_edit(_custom('ghost_feedback.policy', 'no_such_policy')),
    'custom_bad_history': _meta_edit(_custom('ghost_feedback.max_history', 'many')),
    # Issue 34: values the node refuses (its range; the policy's largest window).
    'custom_history_huge': _meta_edit(_custom('ghost_feedback.max_history', '4294967295')),
    'custom_history_beyond_policy': _meta_edit(lambda i, r: i['custom_data'].update({
        'ghost_feedback.policy': 'bucket_likelihood_ratio',
        'ghost_feedback.policy_parameters': '{}', 'ghost_feedback.max_history': '2200'})),
    'custom_deep_parameters': _meta_edit(_custom('ghost_feedback.policy_parameters',
                                                 '[' * 200_000 + ']' * 200_000)),
    'custom_deep_short_parameters': _meta_edit(_custom('ghost_feedback.policy_parameters',
                                                       '[' * 2_000 + ']' * 2_000)),
    'custom_long_parameters': _meta_edit(_custom('ghost_feedback.policy_parameters',
                                                 '{"min_outcomes": 4' + ' ' * 300_000 + '}')),
    'custom_buffer_huge': _meta_edit(_custom('ghost_feedback.outcome_buffer_size',
                                             str(2**62))),
    'version_0': _meta_edit(_set_key(['version'], 0)),
    'version_negative': _meta_edit(_set_key(['version'], -1)),
    'version_10': _meta_edit(_set_key(['version'], 10)),
    'version_string': _meta_edit(_set_key(['version'], 'nine')),
    'negative_duration': _meta_edit(_set_key(['duration', 'nanoseconds'], -5)),
    'altered_duration': _meta_edit(lambda i, r: i['duration'].update(
        nanoseconds=i['duration']['nanoseconds'] + r.randint(1, 10**9))),
    'altered_start': _meta_edit(lambda i, r: i['starting_time'].update(
        nanoseconds_since_epoch=i['starting_time']['nanoseconds_since_epoch'] + 1)),
    'topic_count_up': _meta_edit(_topic_edit('message_count', lambda n, r: n + r.randint(1, 9))),
    'topic_count_down': _meta_edit(_topic_edit('message_count', lambda n, r: max(0, n - 1))),
    'topic_count_negative': _meta_edit(_topic_edit('message_count', lambda n, r: -1)),
    'total_count': _meta_edit(lambda i, r: i.update(message_count=i['message_count'] + 1)),
    'other_type_hash': _meta_edit(_topic_edit('type_description_hash', 'RIHS01_' + '0' * 64)),
    'storage_sqlite': _meta_edit(_set_key(['storage_identifier'], 'sqlite3')),
    'storage_bogus': _meta_edit(_set_key(['storage_identifier'], 'rosbag_v1')),
    'missing_file': _meta_edit(_set_key(['relative_file_paths'], ['gone.mcap'])),
    'no_files': _meta_edit(_set_key(['relative_file_paths'], [])),
    'drop_topics': _meta_edit(_drop_key('topics_with_message_count')),
    'drop_duration': _meta_edit(_drop_key('duration')),
    'topics_not_list': _meta_edit(_set_key(['topics_with_message_count'], {'a': 1})),
    'qos_garbage': _meta_edit(_topic_edit('offered_qos_profiles', [{'history': 'weird'}])),
    'serialization_format': _meta_edit(_topic_edit('serialization_format', 'json')),
    'yaml_truncate': _yaml_damage('truncate'),
    'yaml_flip': _yaml_damage('flip'),
    'yaml_huge': _yaml_damage('huge'),
    'yaml_deep': _yaml_damage('deep'),
    'yaml_aliases': _yaml_damage('aliases'),
    'mcap_truncate': _damage('truncate'),
    'mcap_flip': _damage('flip'),
    'mcap_zero_range': _damage('zero_range'),
    'mcap_random_range': _damage('random_range'),
    'mcap_append': _damage('append'),
    'zstd_bomb': _bomb(),
    'zstd_bomb_size_lie': _bomb(declared='lie'),
    'zstd_bomb_size_lie_no_frame_size': _bomb(declared='lie', content_size=False),
    'zstd_small_size_lie': _chunk_edit(lambda c: (len(c) + 5, 0, 'zstd',
                                                  zstandard.ZstdCompressor().compress(c))),
    'chunk_crc': _chunk_edit(lambda c: (len(c), zlib.crc32(c) ^ 1, '', c)),
    'message_too_large': _chunk_edit(_big_message),
    'record_length_huge': _huge_record_length,
    'text_custom_data': _meta_edit(_custom('note', TERMINAL_PAYLOAD)),
    'text_topic_name': _meta_edit(_topic_edit('name', '/x' + TERMINAL_PAYLOAD)),
}
REFUSED = ('zstd_bomb', 'zstd_bomb_size_lie', 'zstd_bomb_size_lie_no_frame_size',
           'zstd_small_size_lie', 'chunk_crc', 'message_too_large', 'record_length_huge')
"""Bombs, size lies, a bad CRC: always refused."""


@pytest.fixture(scope='module')
def pristine(tmp_path_factory):
    """Return (bag path, {command: parsed JSON of the pristine bag})."""
    bag = _record(tmp_path_factory.mktemp('pristine') / 'bag')
    results = _run_driver([(bag, 'info'), (bag, 'replay')])
    expected = {}
    for result in results:
        assert result['code'] == 0, result
        expected[result['command']] = _comparable(json.loads(result['stdout']))
    assert expected['replay']['identical'] is True
    return bag, expected


def _comparable(document):
    # The path differs; custom_data is shown verbatim by info (replay checks its content);
    # time_origin is the bag's start as metadata.yaml declares it (the episodes' seconds count
    # from it), shown as declared like info's start time.
    document = dict(document)
    for key in ('path', 'bag', 'custom_data', 'time_origin'):
        document.pop(key, None)
    if 'topics' in document:  # a recorded hash other than ours: test_a_different_recorded_...
        document['topics'] = [
            {k: v for k, v in t.items() if k not in ('type_description_hash', 'definition')}
            for t in document['topics']]
    return document


def _cli_env():
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(p for p in sys.path if p)
    return env


def _run_driver(cases):
    stdin = ''.join(json.dumps([str(bag), command]) + '\n' for bag, command in cases)
    result = subprocess.run([sys.executable, '-c', DRIVER], input=stdin, capture_output=True,
                            text=True, timeout=DRIVER_TIMEOUT_S, env=_cli_env())
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def _check(result, expected):
    where = f'{result["bag"]} {result["command"]}'
    assert result['crash'] is None, f'{where}: crashed:\n{result["crash"]}'
    assert 'Traceback' not in result['stderr'], where
    code = result['code']
    if code == 0:
        assert result['stderr'] == '', where
        assert _comparable(json.loads(result['stdout'])) == expected[result['command']], (
            f'{where}: exit 0 with figures that differ from the pristine bag')
    elif code == 1:
        assert result['command'] == 'replay', where
        assert json.loads(result['stdout'])['identical'] is False, where
    else:
        assert code == 2, f'{where}: exit {code}'
        lines = result['stderr'].splitlines()
        assert len(lines) == 1 and lines[0].startswith('ghost-feedback: error: '), (
            f'{where}: {result["stderr"]!r}')
        assert '\x1b' not in result['stderr'] and '\x07' not in result['stderr'], where
        assert result['stdout'] == '', where


@pytest.mark.long
def test_corrupted_copies_end_in_figures_or_one_line(pristine, tmp_path):
    """Every seeded corruption: exit 0 with the pristine figures, exit 1 MISMATCH, or one line."""
    bag, expected = pristine
    rng = random.Random(SEED)
    names = sorted(CLASSES)
    cases = []
    kinds = {}
    for i in range(CASES):
        name = names[i % len(names)] if i < len(names) else rng.choice(names)
        copy = tmp_path / f'{i:03d}_{name}'
        shutil.copytree(bag, copy)
        CLASSES[name](copy, rng)
        kinds[str(copy)] = name
        cases += [(copy, 'info'), (copy, 'replay')]
    outcomes = {}
    for result in _run_driver(cases):
        _check(result, expected)
        outcomes.setdefault(kinds[result['bag']], set()).add((result['command'],
                                                              result['code']))
    # Classes whose damage is certain must be refused by both commands, never read as fine.
    for name in ('empty_type', 'zstd_file', 'zstd_message', 'custom_data_list', 'version_0',
                 'version_negative', 'version_10', 'negative_duration', 'topic_count_up',
                 'topic_count_down', 'total_count', 'yaml_huge', 'missing_file', 'yaml_deep'):
        assert outcomes[name] == {('info', 2), ('replay', 2)}, (name, outcomes[name])
    for name in REFUSED:
        assert outcomes[name] == {('info', 2), ('replay', 2)}, (name, outcomes[name])
    assert ('info', 2) in outcomes['altered_duration'], outcomes['altered_duration']
    # Unusable recorded configuration never verifies OK; a different definition is refused.
    for name in ('custom_bad_json', 'custom_bad_policy', 'custom_bad_history',
                 'other_type_hash', 'custom_history_huge', 'custom_history_beyond_policy',
                 'custom_buffer_huge', 'custom_deep_parameters', 'custom_long_parameters',
                 'custom_deep_short_parameters'):
        assert ('replay', 2) in outcomes[name], (name, outcomes[name])


@pytest.mark.parametrize('which', ['mcap', 'metadata'])
def test_fifo_in_place_of_a_file_is_refused_without_opening_it(pristine, tmp_path, which):
    """A FIFO instead of the MCAP or metadata.yaml: one line, exit 2, no hang (timeout)."""
    bag, _ = pristine
    copy = tmp_path / 'bag'
    shutil.copytree(bag, copy)
    target = _mcap(copy) if which == 'mcap' else copy / 'metadata.yaml'
    target.unlink()
    os.mkfifo(target)
    for command in ('info', 'replay'):
        result = subprocess.run(
            [sys.executable, '-m', 'project_ghost_feedback.cli', command, str(copy)],
            capture_output=True, text=True, timeout=FIFO_TIMEOUT_S, env=_cli_env())
        assert result.returncode == 2, result
        assert 'not a regular file' in result.stderr
        assert len(result.stderr.splitlines()) == 1


def test_a_different_recorded_definition_is_named(pristine, tmp_path):
    """Same type name, other RIHS01 hash: replay says "different definition", info marks it."""
    bag, _ = pristine
    copy = tmp_path / 'bag'
    shutil.copytree(bag, copy)
    loaded = _metadata(copy)
    for topic in _info_of(loaded)['topics_with_message_count']:
        if topic['topic_metadata']['name'] == '/prediction_outcome':
            topic['topic_metadata']['type_description_hash'] = 'RIHS01_' + 'ab' * 32
    _write_metadata(copy, loaded)
    results = _run_driver([(copy, 'info'), (copy, 'replay')])
    info = json.loads(results[0]['stdout'])
    definitions = {t['name']: t['definition'] for t in info['topics']}
    assert definitions['/prediction_outcome'] == 'different'
    assert set(definitions.values()) == {'same', 'different'}
    assert results[1]['code'] == 2
    assert 'different definition' in results[1]['stderr']


def test_a_recorded_invalid_input_is_skipped_and_counted(pristine, tmp_path):
    """A NaN distance in a recorded outcome: replay skips and counts it, as the node would."""
    from rosbags.rosbag2 import Reader, Writer, StoragePlugin

    from project_ghost_feedback.telemetry.msgdefs import typestore

    bag, _ = pristine
    copy = tmp_path / 'bag'
    store = typestore()
    with Reader(bag) as reader, Writer(copy, version=9,
                                       storage_plugin=StoragePlugin.MCAP) as writer:
        added = {}
        for connection in reader.connections:
            added[connection.id] = writer.add_connection(
                connection.topic, connection.msgtype, msgdef=connection.msgdef.data,
                rihs01=connection.digest, serialization_format='cdr')
        poisoned = False
        for connection, log_time, payload in reader.messages():
            if connection.topic == '/prediction_outcome' and not poisoned:
                message = store.deserialize_cdr(payload, connection.msgtype)
                message.position_mahalanobis = float('nan')
                payload = store.serialize_cdr(message, connection.msgtype)
                poisoned = True
            writer.write(added[connection.id], log_time, payload)
    result = _run_driver([(copy, 'replay')])[0]
    assert result['crash'] is None and result['code'] in (0, 1), result
    report = json.loads(result['stdout'])
    assert sum(report['rejected'].values()) == 1, report['rejected']
    assert next(iter(report['rejected'])).startswith('outcome:')
    assert report['outcomes'] == 59


RSS_WRAPPER = r"""
import resource, subprocess, sys
result = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=300)
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(result.returncode, round(peak_mb), repr(result.stderr[-500:]))
"""


@pytest.mark.parametrize('lie', ['declared', 'size_lie'])
def test_a_bomb_stays_under_the_memory_ceiling(pristine, tmp_path, lie):
    """A < 1 MB bag whose chunk expands to 1 GiB: refused, peak RSS (children) < 300 MB."""
    bag, _ = pristine
    copy = tmp_path / 'bomb'
    shutil.copytree(bag, copy)
    _bomb(1 << 30, declared='true' if lie == 'declared' else 'lie')(copy, None)
    assert _mcap(copy).stat().st_size < 1 << 20
    evaluate = ['--estimate', '/prediction_outcome', '--reference', '/self_assessment/raw',
                '--no-plot', '--output-dir']
    commands = {'info': ['info', str(copy)], 'replay': ['replay', str(copy)],
                'audit': ['audit', str(copy), '--workers', '1', '--no-progress'],
                'evaluate': ['evaluate', str(copy)] + evaluate + [str(tmp_path / 'e1')],
                'evaluate .mcap': ['evaluate', str(_mcap(copy))] + evaluate + [
                    str(tmp_path / 'e2')]}
    for name, arguments in commands.items():
        # The wrapper's RUSAGE_CHILDREN covers the CLI and the audit's worker processes only.
        result = subprocess.run(
            [sys.executable, '-c', RSS_WRAPPER, sys.executable, '-m',
             'project_ghost_feedback.cli'] + arguments,
            capture_output=True, text=True, timeout=400, env=_cli_env())
        code, peak_mb, stderr = result.stdout.split(' ', 2)
        assert int(code) == (1 if name == 'audit' else 2), (name, result.stdout)
        assert 'Traceback' not in stderr, (name, stderr)
        assert 'limit' in stderr or 'more than' in stderr, (name, stderr)
        assert int(peak_mb) < RSS_CEILING_MB, (name, peak_mb)


def test_text_from_a_bag_reaches_the_terminal_escaped(pristine, tmp_path):
    """Escape sequences in the directory name and custom data: printed escaped, never raw."""
    bag, _ = pristine
    copy = tmp_path / ('run' + TERMINAL_PAYLOAD)
    shutil.copytree(bag, copy)
    loaded = _metadata(copy)
    _info_of(loaded)['custom_data']['note'] = TERMINAL_PAYLOAD + '\u202e'
    _write_metadata(copy, loaded)
    missing = tmp_path / ('gone' + TERMINAL_PAYLOAD)
    for arguments, code in ((['info', str(copy)], 0), (['replay', str(copy)], 0),
                            (['info', str(missing)], 2)):
        result = subprocess.run(
            [sys.executable, '-m', 'project_ghost_feedback.cli'] + arguments,
            capture_output=True, text=True, timeout=120, env=_cli_env())
        assert result.returncode == code, result
        for text in (result.stdout, result.stderr):
            assert not any(c in text for c in '\x1b\x07\u202e'), (arguments, text)
        assert '\\x1b]0;TITLE\\x07' in result.stdout + result.stderr


@pytest.mark.parametrize('command', ['evaluate', 'audit'])
def test_a_window_the_node_refuses_is_refused_offline_in_one_line(pristine, tmp_path, command):
    """Issue 34 finding 1: evaluate and audit refuse what the node refuses, before any work."""
    bag, _ = pristine
    for arguments, text in ((['--max-history', '100001'], 'max_history must be an int in'),
                            (['--max-history', '2200', '--policy', 'bucket_likelihood_ratio'],
                             'max_history must be <= 512')):
        extra = (['--estimate', '/a', '--reference', '/b', '--output-dir', str(tmp_path / 'e')]
                 if command == 'evaluate' else ['--json', str(tmp_path / 'a.json')])
        result = subprocess.run(
            [sys.executable, '-m', 'project_ghost_feedback.cli', command, str(bag)] + extra
            + arguments, capture_output=True, text=True, timeout=300, env=_cli_env())
        assert result.returncode == 2, result
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and text in lines[0], result.stderr
        assert not (tmp_path / 'e').exists() and not (tmp_path / 'a.json').exists()


def test_evaluate_skips_and_counts_a_message_that_does_not_decode(tmp_path):
    """Issue 34 finding 5: one estimate's CDR cut to 40 bytes is skipped and counted.

    It was an AnyReaderError traceback (exit 1) that left OUT/telemetry behind, whose replay
    said "verify: OK" for half an evaluation.
    """
    from support.ordinary_bags import REFERENCE, ESTIMATE, stack_samples, write_rosbags_bag

    samples = stack_samples()
    cut = []

    def mangle(index, kind, data):
        if kind == 'estimate' and not cut and index > 40:
            cut.append(index)
            return data[:40]
        return data

    bag = write_rosbags_bag(tmp_path / 'run', samples, mangle=mangle)
    clean = write_rosbags_bag(tmp_path / 'clean', samples)
    summaries = {}
    texts = {}
    for name, path in (('cut', bag), ('clean', clean)):
        out = tmp_path / f'out_{name}'
        result = subprocess.run(
            [sys.executable, '-m', 'project_ghost_feedback.cli', 'evaluate', str(path),
             '--estimate', ESTIMATE, '--reference', REFERENCE, '--output-dir', str(out),
             '--no-plot'], capture_output=True, text=True, timeout=300, env=_cli_env())
        assert result.returncode == 0, result.stderr
        assert 'Traceback' not in result.stderr
        summaries[name] = json.loads((out / 'summary.json').read_text())
        texts[name] = result.stdout
        replayed = subprocess.run(
            [sys.executable, '-m', 'project_ghost_feedback.cli', 'replay',
             str(out / 'telemetry')], capture_output=True, text=True, timeout=300,
            env=_cli_env())
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert cut
    assert 'skipped (did not decode): estimates 1, references 0' in texts['cut']
    assert summaries['cut']['bridge']['undecodable_skipped'] == {'estimate': 1, 'reference': 0}
    assert summaries['clean']['bridge']['undecodable_skipped'] == {'estimate': 0, 'reference': 0}
    assert summaries['cut']['bridge']['estimates'] == summaries['clean']['bridge']['estimates'] - 1


def test_info_prints_a_long_value_cut_with_a_count(pristine, tmp_path):
    """Issue 34 finding 4: a 401 KB custom value was printed whole by ``info``."""
    bag, _ = pristine
    copy = tmp_path / 'bag'
    shutil.copytree(bag, copy)
    loaded = _metadata(copy)
    _info_of(loaded)['custom_data']['ghost_feedback.policy_parameters'] = (
        '[' * 200_000 + ']' * 200_000)
    _write_metadata(copy, loaded)
    for arguments in (['info', str(copy)], ['info', str(copy), '--json']):
        result = subprocess.run(
            [sys.executable, '-m', 'project_ghost_feedback.cli'] + arguments,
            capture_output=True, text=True, timeout=120, env=_cli_env())
        assert result.returncode == 0, result.stderr
        assert '... (399,800 more characters)' in result.stdout
        assert len(result.stdout) < 20_000
    replay = subprocess.run(
        [sys.executable, '-m', 'project_ghost_feedback.cli', 'replay', str(copy)],
        capture_output=True, text=True, timeout=120, env=_cli_env())
    assert replay.returncode == 2 and 'Traceback' not in replay.stderr, replay.stderr[-2000:]
    assert 'more than 65,536' in replay.stderr
    assert len(replay.stderr.splitlines()) == 1


def test_evaluate_does_not_pair_poses_of_different_bodies(tmp_path):
    """Issue 34 finding 9, offline: the same rule as the bridge (child_frame_mismatch counted)."""
    import dataclasses

    from support.ordinary_bags import (typestore, ESTIMATE, ODOMETRY, REFERENCE, stack_samples,
                                       write_rosbags_bag)

    store = typestore()

    def other_body(index, kind, data):
        if kind != 'reference':
            return data
        msg = store.deserialize_cdr(data, ODOMETRY)
        return store.serialize_cdr(dataclasses.replace(msg, child_frame_id='robot2/base_link'),
                                   ODOMETRY)

    bag = write_rosbags_bag(tmp_path / 'run', stack_samples(), mangle=other_body)
    params = tmp_path / 'bridge.yaml'
    params.write_text('/**:\n  ros__parameters:\n'
                      "    child_frame_map: ['base_link:robot2/base_link']\n")
    bridges = {}
    for name, extra in (('unrelated', []), ('mapped', ['--params-file', str(params)])):
        out = tmp_path / f'out_{name}'
        result = subprocess.run(
            [sys.executable, '-m', 'project_ghost_feedback.cli', 'evaluate', str(bag),
             '--estimate', ESTIMATE, '--reference', REFERENCE, '--output-dir', str(out),
             '--no-plot'] + extra, capture_output=True, text=True, timeout=300, env=_cli_env())
        if name == 'unrelated':
            # Nothing paired: evaluate cannot judge, exits 2 and names why in one line.
            assert result.returncode == 2, result.stderr
            assert '0 of 240 estimates paired' in result.stderr
            assert 'child_frame_mismatch 240' in result.stderr
            continue
        assert result.returncode == 0, result.stderr
        bridges[name] = json.loads((out / 'summary.json').read_text())['bridge']
    assert bridges['mapped']['paired'] > 0
    assert 'child_frame_mismatch' not in bridges['mapped']['estimates_dropped']


def test_a_foreign_channel_over_the_message_limit_is_skipped_with_a_count(tmp_path):
    """Issue 34 finding 6, read side: a bag is not refused whole for a topic not the node's.

    2 MB messages on a ``record_topics`` topic (as a bag recorded before the recorder refused
    them holds) made ``info`` and ``replay`` refuse the bag with the node's own channels in it.
    """
    from project_ghost_feedback.telemetry.adapters import TelemetryRecord
    from project_ghost_feedback.telemetry.channels import CHANNELS, recorded_topic
    from project_ghost_feedback.telemetry.config import custom_data_for_config
    from project_ghost_feedback.telemetry.writer import TelemetryWriter

    config = LoopConfig.make('calibrated_exceedance', None, 16, 64)
    loop = FeedbackLoop(config)
    big = recorded_topic('/big:std_msgs/msg/String')
    levels = (NamedLevel('x', SelfAssessmentLevel.KNOWN),)
    outcomes = OutcomeModel().outcomes(20, seed=SEED, overconfidence=3.0, rate_hz=10.0,
                                       start_stamp_sim_ns=10**9)

    def string_cdr(size):
        return b'\x00\x01\x00\x00' + struct.pack('<I', size + 1) + b'x' * size + b'\x00'

    bag = tmp_path / 'bag'
    with TelemetryWriter(str(bag), channels=CHANNELS + (big,),
                         custom_data=custom_data_for_config(config)) as writer:
        for index, outcome in enumerate(outcomes):
            loop.outcome(outcome)
            writer.write_contract(outcome)
            raw = BeliefSelfAssessment(outcome.observed_stamp_sim_ns + 1,
                                       SelfAssessmentLevel.KNOWN, levels, ())
            writer.write_contract(raw)
            writer.write_contract(loop.assessment(raw).calibrated)
            writer.write(TelemetryRecord('/big', outcome.observed_stamp_sim_ns + 2,
                                         string_cdr(2_000_000 if index % 5 == 0 else 10)))
    info = subprocess.run([sys.executable, '-m', 'project_ghost_feedback.cli', 'info', str(bag),
                           '--json'], capture_output=True, text=True, timeout=300,
                          env=_cli_env())
    assert info.returncode == 0, info.stderr
    document = json.loads(info.stdout)
    assert document['skipped_oversized'] == {'/big': 4}
    assert {t['name']: t['message_count'] for t in document['topics']}['/big'] == 20
    text = subprocess.run([sys.executable, '-m', 'project_ghost_feedback.cli', 'info', str(bag)],
                          capture_output=True, text=True, timeout=300, env=_cli_env())
    assert 'skipped:     4 message(s) over the 1 MiB limit' in text.stdout
    replay = subprocess.run([sys.executable, '-m', 'project_ghost_feedback.cli', 'replay',
                             str(bag), '--json'], capture_output=True, text=True, timeout=300,
                            env=_cli_env())
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout)['identical'] is True
