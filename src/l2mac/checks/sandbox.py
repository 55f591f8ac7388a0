"""Bubblewrap isolation for generated code, and the choice of runner.

Under bubblewrap a program sees the system read-only, its project folder as the only writable place, a private
/tmp, no network, its own PID namespace (everything dies with the run), no capabilities, and no home directory
or l2mac config. Resource limits and the scrubbed environment of ``checks/runner.py`` apply as well.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from l2mac.checks.environment import VENV
from l2mac.checks.runner import ProcessResult, ResourceLimits, Runner, SubprocessRunner, run_process, scrubbed_env
from l2mac.errors import ConfigError

_ISOLATE = ("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL")
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)"


class BubblewrapRunner:
    isolation = "bubblewrap"

    def __init__(
        self,
        bwrap: str,
        hidden: Iterable[Path] = (),
        visible: Iterable[Path] = (),
        limits: ResourceLimits | None = None,
        *,
        network: bool = False,
        secret: Callable[[str], bool] | None = None,
    ) -> None:
        self.bwrap = bwrap
        self.hidden = [Path(p) for p in hidden]
        self.visible = [Path(p) for p in visible]
        self.limits = limits or ResourceLimits()
        self.network = network
        self.secret = secret  # project files (relative paths) the program sees as empty

    def networked(self) -> BubblewrapRunner:
        """The same isolation, but with the host's network: installers (a README's pip install) need the index."""
        return BubblewrapRunner(self.bwrap, self.hidden, self.visible, self.limits, network=True, secret=self.secret)

    def hiding(self, secret: Callable[[str], bool]) -> BubblewrapRunner:
        """The same isolation, with the project's files for which ``secret`` holds read as empty (a repository's
        .env: the model never reads it, and neither does the code it writes and runs)."""
        return BubblewrapRunner(self.bwrap, self.hidden, self.visible, self.limits, network=self.network, secret=secret)

    def argv(self, argv: Sequence[str], cwd: Path) -> list[str]:
        """The bwrap command line that runs ``argv`` in ``cwd``. Later mounts sit on top of earlier ones."""
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for path in self.hidden:
            if path.is_dir():
                args += ["--tmpfs", str(path)]
            elif path.exists():
                args += ["--ro-bind", "/dev/null", str(path)]
        for path in [*self.visible, *venv_of(argv[0])]:  # interpreters and packages under a hidden folder
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
        cwd = cwd.resolve()
        args += ["--bind", str(cwd), str(cwd)]
        for folder, dirs, names in os.walk(cwd) if self.secret is not None else ():
            dirs[:] = [d for d in dirs if d not in (".git", VENV, "node_modules")]
            for name in names:
                path = Path(folder) / name
                if self.secret is not None and self.secret(path.relative_to(cwd).as_posix()):
                    args += ["--ro-bind", "/dev/null", str(path)]
        if not self.network and (cwd / VENV).is_dir():  # the project's code cannot change what installs run
            args += ["--ro-bind", str(cwd / VENV), str(cwd / VENV)]
        args += ["--chdir", str(cwd)]
        args += [*_ISOLATE, *(["--share-net"] if self.network else []), "--"]
        return args + list(argv)

    def run(self, argv: Sequence[str], cwd: Path, timeout_s: float) -> ProcessResult:
        limits = self.limits.for_timeout(timeout_s)
        return run_process(self.argv(argv, cwd), cwd, timeout_s, env=scrubbed_env(cwd.resolve()), limits=limits)


def bubblewrap_problem(bwrap: str | None) -> str | None:
    """Why bubblewrap cannot be used here, or None when it works (it needs user namespaces or root)."""
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        probe = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *_ISOLATE, "--", "true"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap failed to start: {e}"
    if probe.returncode != 0:
        return f"bubblewrap cannot create its namespaces here: {probe.stderr.strip() or probe.returncode}"
    return None


def venv_of(program: str) -> list[Path]:
    """The virtual environment a program is the interpreter of (a project's ``.venv``, run from a scratch copy
    or under a hidden home folder): shown read-only, like l2mac's own interpreter."""
    exe = Path(program)
    return [exe.parent.parent] if exe.is_absolute() and (exe.parent.parent / "pyvenv.cfg").is_file() else []


def secret_paths(config_path: Path | None) -> list[Path]:
    """What generated code must not see: the home directory (keys, tokens, the l2mac config) and the config."""
    paths = [Path.home()]
    if config_path is not None:
        paths.append(config_path.expanduser())
    return paths


def interpreter_paths() -> list[Path]:
    """The folders the Python running the checks needs (re-exposed when they sit under a hidden one)."""
    exe = Path(os.path.realpath(sys.executable))
    return sorted({Path(sys.prefix), Path(sys.base_prefix), exe.parent})


def choose_runner(
    mode: str = "auto",
    *,
    config_path: Path | None = None,
    bwrap: str | None = None,
    limits: ResourceLimits | None = None,
) -> Runner:
    """``auto``: bubblewrap when it works here, else a limited subprocess. ``bubblewrap``: bubblewrap or a
    ConfigError (``--require-sandbox``). ``subprocess``: the limited subprocess."""
    if mode not in {"auto", "bubblewrap", "subprocess"}:
        raise ConfigError(f"unknown sandbox {mode!r}: use auto, bubblewrap or subprocess")
    if mode == "subprocess":
        return SubprocessRunner(limits)
    path = bwrap or shutil.which("bwrap")
    problem = bubblewrap_problem(path) if sys.platform.startswith("linux") else "bubblewrap needs Linux"
    if problem is None and path is not None:
        return BubblewrapRunner(path, secret_paths(config_path), interpreter_paths(), limits)
    if mode == "bubblewrap":
        raise ConfigError(f"--require-sandbox: {problem}; {INSTALL_HINT}, or drop --require-sandbox")
    return SubprocessRunner(limits)


def isolation_line(isolation: str) -> str:
    """One line for the user at the start of a run: where generated code runs, and what that means."""
    if isolation == "bubblewrap":
        return (
            "generated code runs under bubblewrap: your home folder hidden, the system read-only, only the project "
            "writable, no network"
        )
    return (
        f"generated code runs as a limited subprocess ({isolation}), which does NOT hide your files from it; "
        f"to isolate it, {INSTALL_HINT}"
    )
