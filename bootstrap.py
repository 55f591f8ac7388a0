#!/usr/bin/env python3
"""Set up l2mac in ./.venv and run it, with nothing but python3 (3.10+) on the machine.

    python3 bootstrap.py run "<prompt>" [l2mac options]   set up, then run l2mac (the embedded local model is
                                                          installed and used when no other LLM is configured)
    python3 bootstrap.py test [pytest options]            set up, then lint, type-check and run the test suite
    python3 bootstrap.py e2e [pytest options]             set up with the embedded model (builds llama-cpp-python,
                                                          fetches the model), then run the tests marked local_model
    python3 bootstrap.py shell                            set up, then print how to activate the environment

Set-up is done once and redone only when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def say(msg: str) -> None:
    print(f"[bootstrap] {msg}", flush=True)


def sh(*argv: str | Path, check: bool = True) -> int:
    return subprocess.run([str(a) for a in argv], cwd=ROOT, check=check).returncode


def ensure_env(extras: str = "") -> None:
    """Create .venv and install l2mac with ``extras`` into it, unless that is already done."""
    if sys.version_info < (3, 10):  # noqa: UP036 - this script runs on whatever python3 the machine has
        sys.exit(f"l2mac needs Python 3.10 or newer; this is {sys.version.split()[0]}")
    if not PY.exists():
        say(f"creating {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
        sh(PY, "-m", "pip", "install", "-q", "--upgrade", "pip")
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    stamp = VENV / f".installed-{digest}-{extras or 'base'}"
    if not stamp.exists():
        say(f"installing l2mac{f'[{extras}]' if extras else ''} (the first time takes a few minutes)")
        sh(PY, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", f".[{extras}]" if extras else ".")
        stamp.touch()


def llm_configured() -> bool:
    probe = "from l2mac.settings import load_settings; import sys; sys.exit(0 if load_settings().llm.configured else 1)"
    return subprocess.run([str(PY), "-c", probe], cwd=ROOT).returncode == 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help"}:
        print(__doc__)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "run":
        ensure_env()
        explicit_model = any(a == "--model" or a.startswith("--model=") for a in rest)
        if not explicit_model and not llm_configured():
            ensure_env("local")
            if sh(BIN / "l2mac", "models", "pull", check=False):
                return 1
        return sh(BIN / "l2mac", *rest, check=False)
    if command == "test":
        ensure_env("dev")
        paths = ["src", "tests", "bench", "bootstrap.py"]
        for step in (["ruff", "check", *paths], ["ruff", "format", "--check", *paths], ["mypy"]):
            say(" ".join(step))
            if sh(BIN / step[0], *step[1:], check=False):
                return 1
        say("pytest")
        return sh(PY, "-m", "pytest", *rest, check=False)
    if command == "e2e":
        ensure_env("local,dev")
        if sh(BIN / "l2mac", "models", "pull", check=False):
            return 1
        say("pytest -m local_model")
        return sh(PY, "-m", "pytest", "-m", "local_model", "-v", *rest, check=False)
    if command == "shell":
        ensure_env("dev")
        print(f"source {BIN / 'activate'}")
        return 0
    print(f"unknown command {command!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # Ctrl-C reaches l2mac too, which says what it kept and how to resume
        sys.exit(130)
