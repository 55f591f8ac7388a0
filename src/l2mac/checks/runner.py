"""Runs generated programs in a subprocess: its own process group killed on timeout, resource limits, and an
environment scrubbed of secrets. (Issue 5 adds bubblewrap isolation behind the same interface.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "SYSTEMROOT")


@dataclass(frozen=True)
class ProcessResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def output(self) -> str:
        return (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()


class Runner(Protocol):
    """Runs a command with the project folder as working directory."""

    isolation: str

    def run(self, argv: Sequence[str], cwd: Path, timeout_s: float) -> ProcessResult: ...


def scrubbed_env(cwd: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Only harmless variables: no API keys, tokens or config paths reach generated code."""
    src = os.environ if environ is None else environ
    env = {k: src[k] for k in _SAFE_ENV if k in src}
    env.update(
        HOME=str(cwd),
        PYTHONPATH=str(cwd),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONHASHSEED="0",
        MPLBACKEND="Agg",
        SDL_VIDEODRIVER="dummy",
        QT_QPA_PLATFORM="offscreen",
        NO_COLOR="1",
    )
    return env


def _limits() -> None:  # pragma: no cover - runs in the child
    import resource

    gib = 1024**3
    for what, value in (
        (resource.RLIMIT_AS, 4 * gib),
        (resource.RLIMIT_FSIZE, 256 * 1024**2),
        (resource.RLIMIT_CORE, 0),
    ):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(what, (value, value))


class SubprocessRunner:
    """A plain subprocess with limits. Not a security boundary; see issue 5 for the sandboxed runner."""

    isolation = "subprocess+rlimits"

    def run(self, argv: Sequence[str], cwd: Path, timeout_s: float) -> ProcessResult:
        use_limits = sys.platform != "win32"
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=scrubbed_env(cwd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
            preexec_fn=_limits if use_limits else None,
        )
        try:
            out, err = proc.communicate(timeout=timeout_s)
            return ProcessResult(proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
            out, err = proc.communicate()
            return ProcessResult(-9, out, err + f"\nTimed out after {timeout_s:g}s and was killed.", timed_out=True)
