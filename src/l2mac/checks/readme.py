"""True READMEs: the commands a generated README gives are run as written, in a fresh copy of the project with a
fresh virtual environment, and the report says which of them work.

The commands are the lines of the README's shell code blocks (```bash, ```sh, ```shell, ```console, or an
unlabelled block), a leading ``$ `` dropped; comments, ``cd`` and ``git clone`` lines are skipped (the copy is
the project folder already). They run in order, as a user pastes them, with the fresh environment's ``bin``
first on ``PATH``, under the same sandbox as the project's tests. Install commands (pip, uv) are given the
network, and nothing else is. A command still running at its time limit (a server, a program waiting for
input) is reported as such: it started, and whether it then works is not known.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from l2mac.checks.runner import Runner

README = "README.md"
SHELL_BLOCK = re.compile(r"^```[ \t]*(bash|sh|shell|console|zsh)?[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
INSTALL = re.compile(r"^(python3?\s+-m\s+)?(pip3?|uv)\b")
SKIPPED = re.compile(r"^(cd|git\s+clone|source|\.|export|deactivate|python3?\s+-m\s+venv|virtualenv|uv\s+venv)\b")
#: lines of an unlabelled block that read as commands (an unlabelled block may hold output or a file)
COMMAND_WORDS = re.compile(r"^(python3?|pip3?|uv|pytest|flask|uvicorn|make|bash|sh)\b")


@dataclass(frozen=True)
class ReadmeCommand:
    command: str
    outcome: str  # works | fails | still running
    detail: str = ""  # for a failure: the exit code and the end of the output


def readme_commands(text: str) -> list[str]:
    """The commands the README tells a user to run, in order, without repeats."""
    found: list[str] = []
    for lang, body in SHELL_BLOCK.findall(text):
        for raw in body.splitlines():
            line = raw.strip()
            line = line[2:].strip() if line.startswith("$ ") else line
            if not line or line.startswith("#") or SKIPPED.match(line):
                continue
            if lang or COMMAND_WORDS.match(line):
                found.append(line)
    return list(dict.fromkeys(found))


def verify_readme(
    runner: Runner, files: dict[str, str], timeout_s: float, *, base_python: str = sys.executable
) -> list[ReadmeCommand]:
    """Run the README's commands in a fresh copy with a fresh venv; empty when there is no README or command."""
    commands = readme_commands(files.get(README, ""))
    if not commands:
        return []
    with tempfile.TemporaryDirectory(prefix="l2mac-readme-") as tmp:
        copy = Path(tmp) / "project"
        for rel, text in files.items():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            (copy / rel).write_text(text, encoding="utf-8")
        venv = copy / ".venv"
        made = subprocess.run(
            [base_python, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300, check=False
        )
        if made.returncode != 0:
            return [ReadmeCommand(c, "fails", f"no fresh environment: {made.stderr.strip()[-500:]}") for c in commands]
        return [_run(runner, copy, venv, command, timeout_s) for command in commands]


def _run(runner: Runner, copy: Path, venv: Path, command: str, timeout_s: float) -> ReadmeCommand:
    script = f'export VIRTUAL_ENV={shlex.quote(str(venv))} PATH={shlex.quote(str(venv / "bin"))}:"$PATH"\n{command}'
    chosen = runner.networked() if INSTALL.match(command) else runner
    result = chosen.run(["bash", "-c", script], copy, timeout_s)
    if result.timed_out:
        return ReadmeCommand(command, "still running", f"still running after {timeout_s:.0f} s, then stopped")
    if result.returncode == 0:
        return ReadmeCommand(command, "works")
    return ReadmeCommand(command, "fails", f"exit code {result.returncode}: {result.output[-800:]}")
