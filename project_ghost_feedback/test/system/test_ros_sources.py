# SPDX-License-Identifier: Apache-2.0
"""scripts/ros_sources.sh (``make rosbag2``): cached colcon builds of source tarballs.

Driven on a toy set (a plain CMake package in a tarball, seconds to build) with its own cache
(``XDG_CACHE_HOME``) and link folder (``ROS_SOURCES_LINK_DIR``), so nothing of the clone or of the
real rosbag2 cache is touched: the first run builds and links, a second run only links (colcon does
not run again), other sources get another cache folder, a ROS install that has the package is used
as it is, and a failing build says so in one line and leaves no finished stamp.
"""

import io
import os
import pathlib
import subprocess
import tarfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / 'scripts' / 'ros_sources.sh'
TIMEOUT_S = 600
"""Ceiling of one run of the script (a toy build takes seconds)."""


def toy_tarball(path, body='install(FILES toy.txt DESTINATION share/toy)'):
    """Write a tarball holding ``toy/`` (a plain CMake package) and return its path."""
    files = {
        'toy/CMakeLists.txt': (
            f'cmake_minimum_required(VERSION 3.10)\nproject(toy NONE)\n{body}\n'),
        'toy/toy.txt': 'toy\n',
    }
    with tarfile.open(path, 'w:gz') as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def run_script(tmp_path, *args, ament_prefix_path=''):
    """Run ros_sources.sh with a private cache and link folder; return the CompletedProcess."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / 'cache'),
               ROS_SOURCES_LINK_DIR=str(tmp_path / 'links'),
               AMENT_PREFIX_PATH=ament_prefix_path)
    return subprocess.run(['bash', str(SCRIPT), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, timeout=TIMEOUT_S,
                          check=False)


def cache_dirs(tmp_path):
    """Return the set folders in the private cache."""
    base = tmp_path / 'cache' / 'project_ghost_feedback' / 'ros_sources'
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


@pytest.fixture(autouse=True)
def _needs_the_venv():
    if not (ROOT / '.venv' / 'bin' / 'python').exists():
        pytest.skip('no .venv: make setup first')


def test_first_run_builds_and_links_second_run_only_links(tmp_path):
    tarball = toy_tarball(tmp_path / 'toy-1.tar.gz')
    first = run_script(tmp_path, 'toyset', str(tarball))
    assert first.returncode == 0, first.stdout
    (folder,) = cache_dirs(tmp_path)
    assert folder.name.startswith('toyset-')
    assert (folder / 'install' / '.ros_sources_complete').is_file()
    assert (folder / 'install' / 'share' / 'toy' / 'toy.txt').read_text() == 'toy\n'
    assert not (folder / 'build').exists(), 'build/ is removed once the set is installed'
    link = tmp_path / 'links' / 'toyset'
    assert link.resolve() == (folder / 'install').resolve()
    assert (link / 'local_setup.bash').is_file()
    log = folder / 'log' / 'build_output.txt'
    built = log.read_text()
    assert 'Finished <<< toy' in built

    link.unlink()
    second = run_script(tmp_path, 'toyset', str(tarball))
    assert second.returncode == 0, second.stdout
    assert 'cached build' in second.stdout, second.stdout
    assert log.read_text() == built, 'colcon ran again'
    assert link.resolve() == (folder / 'install').resolve()
    assert cache_dirs(tmp_path) == [folder]


@pytest.mark.parametrize('plant', ['writable_by_others', 'other_owner', 'empty_stamp',
                                   'install_is_a_link'])
def test_a_planted_or_incomplete_cache_entry_is_refused_not_linked(tmp_path, plant):
    """The key is a hash of public inputs: a folder planted under it is not put on the paths."""
    tarball = toy_tarball(tmp_path / 'toy-1.tar.gz')
    assert run_script(tmp_path, 'toyset', str(tarball)).returncode == 0
    (folder,) = cache_dirs(tmp_path)
    link = tmp_path / 'links' / 'toyset'
    link.unlink()
    install, stamp = folder / 'install', folder / 'install' / '.ros_sources_complete'
    if plant == 'writable_by_others':
        install.chmod(0o777)
    elif plant == 'other_owner':
        if os.getuid() != 0:
            pytest.skip('changing an owner needs root')
        os.chown(stamp, 65534, 65534)
    elif plant == 'empty_stamp':
        stamp.write_text('')
    else:
        elsewhere = tmp_path / 'elsewhere'
        install.rename(elsewhere)
        install.symlink_to(elsewhere)
    result = run_script(tmp_path, 'toyset', str(tarball))
    assert result.returncode == 2, result.stdout
    assert 'refusing the cached build' in result.stdout, result.stdout
    assert not link.exists() and not link.is_symlink()


def test_other_sources_get_another_cache_folder(tmp_path):
    one = toy_tarball(tmp_path / 'toy-1.tar.gz')
    two = toy_tarball(tmp_path / 'toy-2.tar.gz', body='install(FILES toy.txt DESTINATION share)')
    for tarball in (one, two):
        result = run_script(tmp_path, 'toyset', str(tarball))
        assert result.returncode == 0, result.stdout
    assert len(cache_dirs(tmp_path)) == 2


def test_a_folder_of_unmodified_files_builds_keyed_by_its_content(tmp_path):
    """A package folder (third_party/px4_msgs) in place of a tarball: built, then a file change."""
    unpacked = tmp_path / 'unpacked'
    with tarfile.open(toy_tarball(tmp_path / 'toy.tar.gz')) as archive:
        archive.extractall(unpacked, filter='data')
    folder = unpacked / 'toy'
    first = run_script(tmp_path, 'toyset', str(folder))
    assert first.returncode == 0, first.stdout
    (built,) = cache_dirs(tmp_path)
    assert (built / 'install' / 'share' / 'toy' / 'toy.txt').read_text() == 'toy\n'
    again = run_script(tmp_path, 'toyset', str(folder))
    assert again.returncode == 0 and 'cached build' in again.stdout, again.stdout
    (folder / 'toy.txt').write_text('changed\n')
    changed = run_script(tmp_path, 'toyset', str(folder))
    assert changed.returncode == 0, changed.stdout
    assert len(cache_dirs(tmp_path)) == 2
    link = tmp_path / 'links' / 'toyset'
    assert (link / 'share' / 'toy' / 'toy.txt').read_text() == 'changed\n'


def test_a_ros_install_that_has_the_package_is_used(tmp_path):
    prefix = tmp_path / 'opt_ros'
    (prefix / 'share' / 'toy').mkdir(parents=True)
    (prefix / 'share' / 'toy' / 'package.xml').write_text('<package/>')
    result = run_script(tmp_path, 'toyset', '--skip-if-found', 'toy',
                        str(toy_tarball(tmp_path / 'toy.tar.gz')), ament_prefix_path=str(prefix))
    assert result.returncode == 0, result.stdout
    assert f'found in {prefix}' in result.stdout, result.stdout
    assert cache_dirs(tmp_path) == []


def test_a_failing_build_says_so_and_is_not_marked_finished(tmp_path):
    tarball = toy_tarball(tmp_path / 'bad.tar.gz', body='message(FATAL_ERROR "toy fails")')
    result = run_script(tmp_path, 'toyset', str(tarball))
    assert result.returncode == 2, result.stdout
    errors = [line for line in result.stdout.splitlines() if line.startswith('[ros_sources] ERROR')]
    assert len(errors) == 1 and 'a re-run resumes' in errors[0], result.stdout
    (folder,) = cache_dirs(tmp_path)
    assert not (folder / 'install' / '.ros_sources_complete').exists()
    assert not (tmp_path / 'links' / 'toyset').exists()


def test_usage_errors_are_one_line(tmp_path):
    result = run_script(tmp_path, 'bad-name', 'x.tar.gz')
    assert result.returncode == 2
    assert result.stdout.strip().count('\n') == 0 and 'letters, digits and _' in result.stdout
    result = run_script(tmp_path, 'toyset', str(tmp_path / 'missing.tar.gz'))
    assert result.returncode == 2 and 'no such tarball' in result.stdout, result.stdout
