"""The project's own Python environment: ``<project>/.venv``, made when the project first declares a third-party
dependency, and brought up to date whenever what it declares changes.

Generated code and its tests then run on that interpreter, so they see what the project declares (and pytest,
which l2mac runs its tests with), never l2mac's own packages; nothing is installed into l2mac's environment.
Installing is the one step that reaches the network, and it runs no generated code: only the declared
requirements are installed, from the package index the user's pip (or uv) is configured for, never the project
itself (its README's install command does that), with l2mac's interpreter in isolated mode and a working folder
outside the project. Under bubblewrap the project's code sees its .venv read-only, so what runs the installer next
time is what the installer wrote. The installer's cache keeps downloads across runs and projects. A failed
install comes back with the installer's own message, for the model to act on; it never raises.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from l2mac.checks.dependencies import Declared

VENV = ".venv"
STAMP = "l2mac-installed.json"  # inside the venv: what was installed, so an unchanged project reinstalls nothing
#: what every project environment gets besides its declarations: the test runner l2mac drives
TEST_RUNNER = "pytest"
INSTALL_TIMEOUT_S = 900.0
#: where installers run: never the project folder, whose files (a pip.py, a uv.toml) they would pick up
NEUTRAL = Path(tempfile.gettempdir())

#: runs an installer command (argv, cwd, timeout): (return code, output). Tests pass a fake.
Install = Callable[[Sequence[str], Path, float], tuple[int, str]]


@dataclass(frozen=True)
class Environment:
    """Where the project's code runs. ``own``: its ``.venv``; otherwise l2mac's interpreter (nothing declared)."""

    python: str
    own: bool = False
    installer: str = ""
    requirements: tuple[str, ...] = ()
    #: seconds the last install took; 0 when nothing had to be installed
    install_s: float = 0.0
    #: the installer's message when installing failed (the environment is then not up to date)
    problem: str = ""

    def failure(self) -> str:
        """What the model is told when installing failed; empty when it did not."""
        if not self.problem:
            return ""
        return f"Installing the project's declared dependencies with {self.installer} failed:\n{self.problem}"


#: environment variables an installer never needs: credentials of other services (an index's own credentials
#: are in PIP_* / UV_* variables or its URL, which stay)
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)


def installer_env(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k.startswith(("PIP_", "UV_")) or not _SECRET.search(k)}


def run_installer(argv: Sequence[str], cwd: Path, timeout_s: float) -> tuple[int, str]:
    """Runs an installer outside the sandbox (it needs the network and the user's index settings). It is only
    ever given l2mac's interpreter in isolated mode (-I), a working folder outside the project, and index
    requirements, so nothing the project holds is imported or built."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env=installer_env(os.environ),
        )
    except subprocess.TimeoutExpired:
        return 1, f"the install took longer than {timeout_s:.0f} s and was stopped"
    except OSError as e:
        return 1, f"the installer could not start: {e}"
    return done.returncode, (done.stdout + "\n" + done.stderr).strip()


class ProjectEnvironment:
    """One project's ``.venv``, kept in step with its declared dependencies (one per run, not shared)."""

    def __init__(
        self,
        root: Path,
        *,
        base_python: str = sys.executable,
        install: Install = run_installer,
        uv: str | None = None,
        timeout_s: float = INSTALL_TIMEOUT_S,
    ) -> None:
        self.root = root
        self.base_python = base_python
        self.install = install
        self.uv = uv if uv is not None else shutil.which("uv")
        self.timeout_s = timeout_s
        self.current = Environment(base_python)
        self.install_s = 0.0  # seconds spent installing over the run
        self._lock = threading.Lock()  # SoA agents and tools may sync at once: one install at a time
        self._failed: dict[str, Environment] = {}  # by fingerprint: the same declarations are not tried twice

    @property
    def venv_python(self) -> Path:
        return self.root / VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    def sync(self, declared: Declared | None = None) -> Environment:
        """Make or update the environment for what the project declares now; cheap when nothing changed."""
        with self._lock:
            return self._sync(declared or Declared.read(self.root))

    def _sync(self, declared: Declared) -> Environment:
        wanted = declared.requirements
        if not wanted:
            self.current = Environment(self.base_python)
            return self.current
        installer = "uv" if self.uv else "pip"
        fingerprint = _fingerprint(wanted)
        if self.venv_python.exists() and self._stamp() == fingerprint:
            self.current = Environment(str(self.venv_python), True, installer, wanted)
            return self.current
        if fingerprint in self._failed:  # unchanged since it failed: the same answer, without the wait
            failed = self._failed[fingerprint]
            self.current = Environment(self.current.python, self.current.own, installer, wanted, 0.0, failed.problem)
            return self.current
        began = time.monotonic()
        problem = self._create() or self._install(wanted)
        took = round(time.monotonic() - began, 2)
        self.install_s += took
        if problem:  # the code keeps running where it ran before; the model is told why
            self.current = Environment(self.current.python, self.current.own, installer, wanted, took, problem)
            self._failed[fingerprint] = self.current
        else:
            (self.root / VENV / STAMP).write_text(json.dumps({"fingerprint": fingerprint, "requirements": wanted}))
            self.current = Environment(str(self.venv_python), True, installer, wanted, took)
        return self.current

    def _stamp(self) -> str:
        try:
            return str(json.loads((self.root / VENV / STAMP).read_text(encoding="utf-8"))["fingerprint"])
        except (OSError, ValueError, KeyError, TypeError):
            return ""

    def _create(self) -> str:
        if self.venv_python.exists():
            return ""
        venv = str(self.root / VENV)
        argv = (
            [self.uv, "venv", "--quiet", "--no-config", "--python", self.base_python, venv]
            if self.uv
            else [self.base_python, "-I", "-m", "venv", "--without-pip", venv]
        )
        code, output = self.install(argv, NEUTRAL, self.timeout_s)
        return "" if code == 0 else f"creating {VENV} failed:\n{_tail(output)}"

    def _install(self, requirements: tuple[str, ...]) -> str:
        python = str(self.venv_python)
        packages = [TEST_RUNNER, *requirements]
        # pip with --python installs into the venv without a pip of its own there (pip >= 22.3)
        pip = [self.base_python, "-I", "-m", "pip", "--python", python, "install", "--quiet", "--no-input"]
        uv = [self.uv, "pip", "install", "--quiet", "--no-config", "--python", python] if self.uv else []
        argv = [*(uv or pip), *packages]
        code, output = self.install(argv, NEUTRAL, self.timeout_s)
        return "" if code == 0 else f"installing {', '.join(requirements)} failed:\n{_tail(output)}"


def _fingerprint(requirements: tuple[str, ...]) -> str:
    text = json.dumps([sys.version, TEST_RUNNER, *sorted(requirements)])
    return hashlib.sha256(text.encode()).hexdigest()


def _tail(output: str, limit: int = 2500) -> str:
    """The installer's last words: where a resolver says what it could not find."""
    return output if len(output) <= limit else "..." + output[-limit:]
