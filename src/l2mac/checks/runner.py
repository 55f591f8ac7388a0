"""Runs generated programs in a subprocess: its own process group (or PID namespace) killed on timeout, resource
limits, and an environment scrubbed of secrets. ``checks/sandbox.py`` adds bubblewrap isolation on top.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
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

    def networked(self) -> Runner:
        """The same runner with the network reachable: for installers only, never for the project's code."""
        ...


def scrubbed_env(cwd: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Only harmless variables: no API keys, tokens or config paths reach generated code. Its modules import
    from the project folder, and from its ``src/`` folder when it has one, as l2mac's import checks take them
    (``src/pkg/mod.py`` is ``pkg.mod``; seen on DevBench: a step told to import ``hybrid`` from src/hybrid.py,
    whose every test run then failed with "No module named 'hybrid'")."""
    src = os.environ if environ is None else environ
    env = {k: src[k] for k in _SAFE_ENV if k in src}
    env.update(
        HOME=str(cwd),
        PYTHONPATH=os.pathsep.join([str(cwd), *([str(cwd / "src")] if _src_layout(cwd) else [])]),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONHASHSEED="0",
        MPLBACKEND="Agg",
        SDL_VIDEODRIVER="dummy",  # a game or GUI runs headless: pygame draws to no window, plays to no device
        SDL_AUDIODRIVER="dummy",
        QT_QPA_PLATFORM="offscreen",
        NO_COLOR="1",
    )
    return env


def _src_layout(cwd: Path) -> bool:
    """A ``src/`` folder of modules and packages; one that is itself a package is imported as ``src``, and on
    the path too its modules would load twice, under two names (two classes each, and isinstance fails)."""
    return (cwd / "src").is_dir() and not (cwd / "src" / "__init__.py").exists()


@dataclass(frozen=True)
class ResourceLimits:
    """Per-run limits. ``processes`` binds through a pids cgroup when one can be made, else RLIMIT_NPROC (which
    the kernel does not apply to root)."""

    cpu_s: int = 300
    memory_bytes: int = 4 * 1024**3
    file_bytes: int = 256 * 1024**2
    processes: int = 256

    def for_timeout(self, timeout_s: float) -> ResourceLimits:
        """These limits with the CPU limit set just above a run's timeout."""
        return ResourceLimits(max(1, int(timeout_s) + 5), self.memory_bytes, self.file_bytes, self.processes)


class PidsCgroup:
    """A pids cgroup (v2, or v1's pids hierarchy) holding one child process tree, when the system lets us make one.

    Best effort: where cgroups are not writable, ``path`` is None and the caller falls back to RLIMIT_NPROC."""

    def __init__(self, limit: int, roots: Sequence[Path] = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))):
        self.path: Path | None = None
        for root in roots:
            with contextlib.suppress(OSError):
                if not (root / "cgroup.procs").exists():
                    continue
                if root.name != "pids" and "pids" not in (root / "cgroup.subtree_control").read_text():
                    continue
                path = root / f"l2mac-{uuid.uuid4().hex[:12]}"
                path.mkdir()
                try:
                    (path / "pids.max").write_text(str(limit))
                except OSError:
                    path.rmdir()
                    continue
                self.path = path
                return

    def join(self) -> None:  # pragma: no cover - runs in the child
        if self.path is not None:
            with contextlib.suppress(OSError):
                (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def kill_all(self) -> None:
        """SIGKILL whatever is still in the group (a fork bomb's orphans), then remove it."""
        if self.path is None:
            return
        for _ in range(50):
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _limiter(limits: ResourceLimits, cgroup: PidsCgroup | None) -> Callable[[], None]:
    def apply() -> None:  # pragma: no cover - runs in the child
        import resource

        if cgroup is not None:
            cgroup.join()
        for what, value in (
            (resource.RLIMIT_CPU, limits.cpu_s),
            (resource.RLIMIT_AS, limits.memory_bytes),
            (resource.RLIMIT_FSIZE, limits.file_bytes),
            (resource.RLIMIT_NPROC, limits.processes),
            (resource.RLIMIT_CORE, 0),
        ):
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(what, (value, value))

    return apply


def run_process(
    argv: Sequence[str],
    cwd: Path,
    timeout_s: float,
    *,
    env: Mapping[str, str],
    limits: ResourceLimits | None,
) -> ProcessResult:
    """Run ``argv`` in a new session under ``limits``; on timeout kill its whole process group (and cgroup)."""
    posix = sys.platform != "win32"
    cgroup = PidsCgroup(limits.processes) if posix and limits is not None else None
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
        preexec_fn=_limiter(limits, cgroup) if posix and limits is not None else None,
    )
    try:
        try:
            out, err = proc.communicate(timeout=timeout_s)
            return ProcessResult(proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
            if cgroup is not None:
                cgroup.kill_all()
            try:
                out, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:  # a grandchild holds the pipes open
                out, err = "", ""
            return ProcessResult(-9, out, err + f"\nTimed out after {timeout_s:g}s and was killed.", timed_out=True)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # nothing outlives its run, even a daemonised grandchild
        if cgroup is not None:
            cgroup.kill_all()


class SubprocessRunner:
    """A plain subprocess with resource limits and a scrubbed environment. Not a security boundary: it can read
    and write what the user can. Use ``BubblewrapRunner`` (``checks/sandbox.py``) for that."""

    def __init__(self, limits: ResourceLimits | None = None) -> None:
        self.limits = limits or ResourceLimits()
        self.isolation = "subprocess+rlimits"

    def run(self, argv: Sequence[str], cwd: Path, timeout_s: float) -> ProcessResult:
        limits = self.limits.for_timeout(timeout_s)
        return run_process(argv, cwd, timeout_s, env=scrubbed_env(cwd), limits=limits)

    def networked(self) -> Runner:
        return self  # a plain subprocess has the network anyway
