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


#: compiler flags that leave llama.cpp's AMX kernels out of the embedded model's build
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"


def sh(*argv: str | Path, check: bool = True, env: dict[str, str] | None = None) -> int:
    return subprocess.run([str(a) for a in argv], cwd=ROOT, check=check, env=env).returncode


def has_amx() -> bool:
    """Whether this CPU reports Intel AMX (Linux)."""
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def build_env(extras: str) -> tuple[dict[str, str] | None, list[str]]:
    """The environment and extra pip options of the install: with the embedded model on a CPU with AMX,
    llama-cpp-python is compiled from source without its AMX kernels (not a wheel, nor one from pip's cache).
    Seen here on a Xeon with AMX: llama.cpp built for the native CPU died of SIGSEGV in ggml_backend_amx_mul_mat
    at its first matrix product with this Q4_K_M model, a known machine-dependent crash (ggml-org/llama.cpp
    issue 20824, closed without a fix)."""
    if "local" not in extras.split(",") or not has_amx():
        return None, []
    env = dict(os.environ)
    for name in ("CFLAGS", "CXXFLAGS"):
        env[name] = f"{env.get(name, '')} {NO_AMX}".strip()
    return env, ["--no-cache-dir", "--no-binary", "llama-cpp-python"]


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
    env, options = build_env(extras)
    without_amx = VENV / ".llama-cpp-without-amx"
    if not stamp.exists() or (env is not None and not without_amx.exists()):
        say(f"installing l2mac{f'[{extras}]' if extras else ''} (the first time takes a few minutes)")
        if env is not None and not without_amx.exists():  # a build from before: compiled again, without AMX
            say("this CPU has AMX: llama-cpp-python is compiled without its AMX kernels (llama.cpp issue 20824)")
            sh(PY, "-m", "pip", "uninstall", "-y", "-q", "llama-cpp-python", check=False)
        target = f".[{extras}]" if extras else "."
        sh(PY, "-m", "pip", "install", "-q", "--disable-pip-version-check", *options, "-e", target, env=env)
        stamp.touch()
        if env is not None:
            without_amx.touch()


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
