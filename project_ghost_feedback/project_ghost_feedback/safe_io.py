# SPDX-License-Identifier: Apache-2.0
"""Text from bags made safe for a terminal, and output paths checked before any work starts.

A bag's topic names, types, custom data and the paths of its directory are data from elsewhere:
:func:`terminal_text` escapes every control, format, separator and surrogate character (an
escape sequence would retitle or recolour the user's terminal, a surrogate from an undecodable
file name would crash the print). :func:`check_output_file` / :func:`check_output_dir` refuse an
output path that cannot be written before a long run, with a one-line reason (ValueError).
Standard library only.
"""

import os
import sys
import unicodedata
from typing import Any, TextIO

_UNSAFE_CATEGORIES = ('Cc', 'Cf', 'Cs', 'Zl', 'Zp')


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f'\\x{code:02x}'
    return f'\\u{code:04x}' if code < 0x10000 else f'\\U{code:08x}'


def terminal_text(text: object, keep: str = '\n') -> str:
    """Return ``text`` with every unsafe character but those in ``keep`` as a visible escape."""
    text = str(text)
    if text.isprintable():
        return text
    return ''.join(
        _escape(char) if char not in keep and unicodedata.category(char) in _UNSAFE_CATEGORIES
        else char for char in text)


PRINT_LIMIT = 200
"""Characters of one value from a bag that ``info`` prints; the rest is counted."""


def cut_text(text: object, limit: int = PRINT_LIMIT) -> str:
    """Return ``text`` cut to ``limit`` characters and the count of the rest, if longer.

    ``'abc...'`` -> ``'ab... (401,234 more characters)'``: a bag's custom data may hold
    hundreds of kilobytes (under metadata.yaml's cap) that nobody reads on a terminal.
    """
    text = str(text)
    if len(text) <= limit:
        return text
    return f'{text[:limit]}... ({len(text) - limit:,} more characters)'


class TerminalStream:
    """A text stream that writes through :func:`terminal_text` (newlines and tabs kept)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        """Write ``text``, escaped."""
        return self.stream.write(terminal_text(text, keep='\n\t'))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def check_output_file(path: str, option: str) -> None:
    """Raise ValueError unless ``path`` can be created or overwritten as a file."""
    if path == '-':
        return
    if os.path.isdir(path):
        raise ValueError(f'{option} {path}: is a directory')
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise ValueError(f'{option} {path}: not writable')
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f'{option} {path}: directory {parent} does not exist')
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f'{option} {path}: directory {parent} is not writable')


def check_output_dir(path: str, option: str) -> None:
    """Raise ValueError unless ``path`` is a writable directory or can be created as one."""
    path = os.path.abspath(path)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise ValueError(f'{option} {path}: exists and is not a directory')
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f'{option} {path}: directory is not writable')
        return
    parent = path
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ValueError(f'{option} {path}: {parent} is not a directory')
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f'{option} {path}: directory {parent} is not writable')


def print_error(prog: str, message: object, stream: TextIO | None = None) -> None:
    """Print ``<prog>: error: <message>`` on one line (escaped) on ``stream`` (stderr)."""
    text = ' '.join(terminal_text(message).split())
    print(f'{prog}: error: {text}', file=stream or sys.stderr, flush=True)
