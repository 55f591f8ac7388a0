"""The command line's consoles: rich on a terminal; on a pipe or a file, whole lines, never cut or wrapped at 80
columns (``l2mac models list | cat`` shows every name in full)."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape

#: the width given to output that goes to a pipe or a file: wide enough that nothing is cut
PIPE_WIDTH = 10_000


def make_console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=PIPE_WIDTH, soft_wrap=True)


def print_error(console: Console, message: object) -> None:
    """``error: <message>`` in red; the message as written (``pip install 'l2mac[ray]'`` is no markup tag)."""
    console.print(f"[red]error:[/] {escape(str(message))}", highlight=False)
