"""The command line's consoles: rich on a terminal; on a pipe or a file, whole lines, never cut or wrapped at 80
columns (``l2mac models list | cat`` shows every name in full)."""

from __future__ import annotations

import sys

from rich.console import Console

#: the width given to output that goes to a pipe or a file: wide enough that nothing is cut
PIPE_WIDTH = 10_000


def make_console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=PIPE_WIDTH, soft_wrap=True)
