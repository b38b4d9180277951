# SPDX-License-Identifier: Apache-2.0
"""scripts/env.sh leaves the shell's descriptors alone, so every error message reaches the user.

Issue 24: `exec {fd}>lock 2>/dev/null` (an exec without a command) made the 2>/dev/null permanent,
so every shell that sourced env.sh, every Makefile target and run_in_env.sh lost its stderr.
"""

import os
from pathlib import Path
import re
import subprocess

import pytest

ROOT = Path(__file__).resolve().parents[3]
ENV_SH = ROOT / 'scripts' / 'env.sh'
RUN_IN_ENV = ROOT / 'scripts' / 'run_in_env.sh'

# Lists this shell's descriptors as "fd target" lines, from a child process (a command
# substitution would add its own pipe to the list); targets through /proc compare by identity.
_LIST_FDS = "find /proc/$$/fd -mindepth 1 -printf '%f %l\\n'"


def _env_without_domain():
    env = dict(os.environ)
    env.pop('ROS_DOMAIN_ID', None)
    env.pop('GHOST_FEEDBACK_DOMAIN_LOCK_FD', None)
    return env


def _fds(text):
    return dict(line.split(' ', 1) for line in text.strip().splitlines())


def _source_and_report(env, cwd):
    script = (
        f'{_LIST_FDS}; echo ---; source {ENV_SH} || exit 9; {_LIST_FDS}; echo ---; '
        'echo "lock=${GHOST_FEEDBACK_DOMAIN_LOCK_FD:-none}"; echo ---; '
        # A program started after sourcing: which descriptors did it inherit?
        'python3 -c "import os; print(*sorted(os.listdir(\'/proc/self/fd\'), key=int))"; '
        'echo "stderr still reaches the caller" >&2'
    )
    result = subprocess.run(
        ['bash', '-c', script], env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
        check=False)
    assert result.returncode == 0, result.stderr
    before, after, lock, child = result.stdout.split('---\n')
    return _fds(before), _fds(after), lock.strip(), child.split(), result.stderr


@pytest.mark.parametrize('cwd', ['/', str(ROOT / 'project_ghost_feedback')])
def test_sourcing_without_a_domain_id_keeps_fds_0_to_2_and_adds_only_the_lock(cwd):
    before, after, lock, child, stderr = _source_and_report(_env_without_domain(), cwd)
    assert 'stderr still reaches the caller' in stderr
    for fd in ('0', '1', '2'):
        assert after[fd] == before[fd], f'fd {fd} moved from {before[fd]} to {after[fd]}'
    assert lock != 'lock=none', 'a free ROS_DOMAIN_ID is held by a lock descriptor'
    lock_fd = lock.split('=', 1)[1]
    assert set(after) - set(before) == {lock_fd}
    _assert_a_lock_of_this_users(after[lock_fd])
    # The child sees what the shell had, the lock, and its own listing descriptor; nothing else.
    leaked = set(child) - set(before) - {lock_fd}
    assert len(leaked) <= 1, f'descriptors leaked into a started program: {sorted(leaked)}'


def _assert_a_lock_of_this_users(path):
    """Assert the lock is in a directory only this user can write to (no planted symlink)."""
    lock = Path(path)
    assert lock.name.startswith('ros_domain_') and lock.name.endswith('.lock'), path
    folder = lock.parent
    assert not folder.is_symlink() and folder.stat().st_uid == os.getuid(), path
    assert folder.stat().st_mode & 0o022 == 0, f'{folder} is writable by others'
    assert folder != Path('/tmp') and not lock.name.startswith('.ghost_feedback'), path


def test_the_lock_is_in_a_directory_only_this_user_can_write(tmp_path):
    """Keep the domain locks out of world-writable directories.

    No lock in a world-writable directory, where another user could plant a symlink named
    like a lock and have the open truncate its target.

    XDG_RUNTIME_DIR that is a symlink (it could point anywhere) is not used: the locks go under
    HOME, a directory of this user's.
    """
    env = _env_without_domain()
    home = tmp_path / 'home'
    home.mkdir()
    env['HOME'] = str(home)
    runtime = tmp_path / 'runtime'
    runtime.mkdir()
    env['XDG_RUNTIME_DIR'] = str(tmp_path / 'runtime_link')
    (tmp_path / 'runtime_link').symlink_to(runtime)
    _, after, lock, _, _ = _source_and_report(env, str(ROOT))
    lock_fd = lock.split('=', 1)[1]
    _assert_a_lock_of_this_users(after[lock_fd])
    assert after[lock_fd].startswith(str(home / '.cache' / 'project_ghost_feedback' / 'locks'))
    assert not any(runtime.iterdir())
    # A runtime directory of this user's is used as it is.
    env['XDG_RUNTIME_DIR'] = str(runtime)
    _, after, lock, _, _ = _source_and_report(env, str(ROOT))
    assert after[lock.split('=', 1)[1]].startswith(str(runtime / 'project_ghost_feedback'))


def test_sourcing_with_a_domain_id_opens_no_descriptor():
    env = _env_without_domain()
    env['ROS_DOMAIN_ID'] = '77'
    before, after, lock, _, stderr = _source_and_report(env, str(ROOT))
    assert 'stderr still reaches the caller' in stderr
    assert after == before
    assert lock == 'lock=none'


def _damaged_bag(tmp_path):
    bag = tmp_path / 'damaged_bag'
    bag.mkdir()
    (bag / 'metadata.yaml').write_text('rosbag2_bagfile_information: [this is not, a mapping\n')
    (bag / 'damaged_bag_0.mcap').write_bytes(b'\x89MCAP0\r\n' + b'\x00' * 40)
    return bag


def test_run_in_env_shows_the_one_line_reason_for_a_damaged_bag(tmp_path):
    result = subprocess.run(
        [str(RUN_IN_ENV), 'ghost-feedback', 'info', str(_damaged_bag(tmp_path))],
        env=_env_without_domain(), capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith('ghost-feedback: error:') and 'damaged_bag' in lines[0]


# `make demo` runs `make setup` first, whose colcon build rewrites install/ (the node executables,
# the package's egg-link and setup scripts), build/ and the .ros_sources/ links that every other
# test process reads: never beside another test (make test's serial phase).
@pytest.mark.serial
def test_make_demo_shows_the_usage_error_of_a_bad_option():
    result = subprocess.run(
        ['make', '--no-print-directory', '-C', str(ROOT), 'demo', 'DEMO_ARGS=--bogus-option'],
        env=_env_without_domain(), capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode != 0
    assert 'unrecognized arguments: --bogus-option' in result.stderr, result.stderr
    assert 'usage: ghost-feedback demo' in result.stderr


# `exec` with redirections and no command changes the shell's own descriptors for good.
_REDIRECT = re.compile(r'^(\{\w+\}|\d*)[<>]')


def _silences_the_shell(statement):
    """Whether a shell statement is a command-less exec that redirects fd 1 or 2."""
    words = statement.split()
    if not words or words[0] != 'exec':
        return False
    redirections = [w for w in words[1:] if w not in ('||', '&&', ';', 'continue', 'true')]
    if not redirections or not all(_REDIRECT.match(w) for w in redirections):
        return False  # exec runs a command: its redirections end with it
    return any(re.match(r'^[12]?>', w) for w in redirections)


def test_no_script_silences_its_shell_with_a_bare_exec_redirect():
    offenders = []
    sources = sorted((ROOT / 'scripts').glob('*.sh')) + [ROOT / 'Makefile', ROOT / '.ci' / 'run']
    for path in sources:
        lines = path.read_text().splitlines()
        index = 0
        while index < len(lines):
            statement = lines[index].split('#', 1)[0]
            first = index
            while statement.rstrip().endswith('\\') and index + 1 < len(lines):
                index += 1
                statement = statement.rstrip()[:-1] + ' ' + lines[index].split('#', 1)[0]
            if _silences_the_shell(statement.strip()):
                offenders.append(f'{path.name}:{first + 1}: {lines[first].strip()}')
            index += 1
    assert not offenders, 'bare exec redirecting stdout/stderr: ' + '; '.join(offenders)


def test_the_scan_flags_the_old_pattern_and_passes_the_fixed_one():
    assert _silences_the_shell('exec {fd}>"/tmp/x.lock" 2>/dev/null || continue')
    assert _silences_the_shell('exec >/dev/null')
    assert not _silences_the_shell('{ exec {fd}>"/tmp/x.lock"; } 2>/dev/null || continue')
    assert not _silences_the_shell('exec {fd}>&-')
    assert not _silences_the_shell('exec "$@" 2>/dev/null')
