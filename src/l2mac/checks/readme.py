"""True READMEs: the commands a generated README gives are run as written, in a fresh copy of the project with a
fresh virtual environment, and the report says which of them work.

The commands are the lines of the README's shell code blocks (```bash, ```sh, ```shell; in ```console the lines
after a ``$`` prompt; in an unlabelled block the lines that start like a command), lines continued with a backslash
joined; comments, ``cd``, ``git clone`` and venv creation or activation are skipped (the copy is the project
folder, and has its venv). They run in order, as a user pastes them, with the fresh environment's ``bin`` first on
``PATH``, under the same sandbox as the project's tests, with its scrubbed environment and hidden home folder (so
without the user's own pip settings). A bare ``pip install``, ``uv pip install`` or ``uv sync`` line is given the
network, and nothing else is. A command still running at its time limit (a server, a program waiting for
input) is reported as such: it started, and whether it then works is not known. The commands that ask a URL on
this machine (``curl http://localhost:5000/notes``) run the way a user runs them, while the first such command
(the server) runs.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from l2mac.checks.environment import INSTALL_TIMEOUT_S
from l2mac.checks.runner import ProcessResult, Runner

README = "README.md"
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
SHELL = frozenset({"bash", "sh", "shell", "zsh"})
#: install commands, the only ones given the network; a line that chains anything after them is not one
INSTALL = re.compile(r"^(?:(?:python3?\s+-m\s+)?pip3?\s+install|uv\s+pip\s+install|uv\s+sync)\b[^;&|`$<>()]*$")
SKIPPED = re.compile(
    r"^(?:(?:cd|git\s+clone|source|export|deactivate|virtualenv|uv\s+venv|python3?\s+-m\s+venv)\b|\.\s)"
)
#: lines of an unlabelled block that read as commands (an unlabelled block may hold output or a file)
COMMAND_WORDS = re.compile(r"^(python3?|pip3?|uv|pytest|flask|uvicorn|make|bash|sh)\b")
#: a URL on this machine: a command that names one asks a program the README starts (a server) for something
#: (a URL, with its scheme or its port: ``flask run --host 127.0.0.1`` names a host, it asks nothing)
LOCAL_URL = re.compile(r"\bhttps?://(?:localhost|127\.0\.0\.1|0\.0\.0\.0)(?::(\d+))?|\blocalhost:(\d+)")
#: how long a server started for the commands that ask it may take to listen, at most
SERVER_WAIT_S = 20
_RC = "__l2mac_exit_code__"
_BEGIN, _END = "__l2mac_asked__", "__l2mac_answered__"
#: one command run while the server ran: its output, its exit code, what the server logged meanwhile
_ASKED = re.compile(rf"{_BEGIN}\n(.*?){_RC}=(\d+)\n(.*?){_END}", re.DOTALL)
#: a server's own error in its log: a traceback, or a 5xx status in its access log (werkzeug, uvicorn, http.server)
#: a terminal's colour codes, which werkzeug puts around a 5xx request's line even in a file
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
SERVER_ERROR = re.compile(r"Traceback \(most recent call last\)|HTTP/\d(?:\.\d)?\"? (5\d\d)\b")


@dataclass(frozen=True)
class ReadmeCommand:
    command: str
    outcome: str  # works | fails | still running | not run
    detail: str = ""  # for a failure: the exit code and the end of the output


def readme_commands(text: str) -> list[str]:
    """The commands the README tells a user to run, in order, without repeats."""
    found: list[str] = []
    for lang, lines, _ in _blocks(text):
        for raw in _joined(lines):
            line = raw.strip()
            prompted = line.startswith("$ ")
            line = line[2:].strip() if prompted else line
            if not line or line.startswith("#") or SKIPPED.match(line):
                continue
            if lang in SHELL or (lang == "console" and prompted) or (not lang and COMMAND_WORDS.match(line)):
                found.append(line)
    return list(dict.fromkeys(found))


def _blocks(text: str) -> list[tuple[str, list[str], int]]:
    """The fenced blocks of a Markdown text: (language, lines, the index of the opening fence's line). A fence
    closes only with the same character, at least as long, and nothing else on its line."""
    blocks: list[tuple[str, list[str], int]] = []
    fence, lang, start = "", "", 0
    lines: list[str] = []
    for i, line in enumerate(text.splitlines()):
        if not fence:
            if opened := FENCE.match(line):
                fence, lang, lines, start = opened.group(1), opened.group(2).lower(), [], i
        elif line.strip() and set(line.strip()) == {fence[0]} and len(line.strip()) >= len(fence):
            blocks.append((lang, lines, start))
            fence = ""
        else:
            lines.append(line)
    return blocks


def _joined(lines: list[str]) -> list[str]:
    """Lines continued with a trailing backslash, joined into one command."""
    out: list[str] = []
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
        else:
            out.append(pending + line)
            pending = ""
    return [*out, pending] if pending else out


def verify_readme(
    runner: Runner, files: dict[str, str], timeout_s: float, *, base_python: str = sys.executable
) -> list[ReadmeCommand]:
    """Run the README's commands in a fresh copy with a fresh venv; empty when there is no README or command."""
    commands = readme_commands(files.get(README, ""))
    if not commands:
        return []
    try:
        return _verify_in_copy(runner, files, commands, timeout_s, base_python)
    except OSError as e:  # no room for the copy, say: the run's report is still written
        return [ReadmeCommand(c, "not run", f"no fresh copy could be made: {e}") for c in commands]


def _verify_in_copy(
    runner: Runner, files: dict[str, str], commands: list[str], timeout_s: float, base_python: str
) -> list[ReadmeCommand]:
    with tempfile.TemporaryDirectory(prefix="l2mac-readme-") as tmp:
        copy = Path(tmp) / "project"
        for rel, text in files.items():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            (copy / rel).write_text(text, encoding="utf-8")
        venv = copy / ".venv"
        try:
            made = subprocess.run(
                [base_python, "-I", "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300, check=False
            )
            problem = made.stderr.strip()[-500:] if made.returncode else ""
        except (OSError, subprocess.SubprocessError) as e:
            problem = str(e)
        if problem:
            return [ReadmeCommand(c, "not run", f"no fresh environment could be made: {problem}") for c in commands]
        asking = [c for c in commands if LOCAL_URL.search(c)]
        checked = [_run(runner, copy, venv, c, timeout_s) for c in commands if c not in asking]
        server = next((c.command for c in checked if c.outcome == "still running"), None)
        if server is None:
            asked = [_run(runner, copy, venv, c, timeout_s) for c in asking]
        else:
            asked = _ask_server(runner, copy, venv, server, asking, timeout_s)
        outcomes = {c.command: c for c in [*checked, *asked]}
        return [outcomes[c] for c in commands]


def _ask_server(
    runner: Runner, copy: Path, venv: Path, server: str, asking: list[str], timeout_s: float
) -> list[ReadmeCommand]:
    """Run the commands that ask a local URL (``curl http://localhost:5000/notes``) as a user does, in a second
    terminal while the README's server command runs: it is started first, each command runs once the port it
    asks answers (at most :data:`SERVER_WAIT_S`), in order, then the server is stopped. All of it is one sandboxed
    script, so the commands reach the server in the sandbox's own network namespace and nothing else. A command
    the server answered with an error of its own (a traceback, or a 5xx status in its log) fails, though curl
    exits 0 for it: seen on the notes API at c1bae50, where every request answered 500 "no such table"."""
    log = ".l2mac-server.log"  # in the copy, the one folder the sandbox lets it write
    lines = [f"( {server} ) > {log} 2>&1 &", "server=$!"]
    for command in asking:
        port = next((m.group(1) or m.group(2) for m in LOCAL_URL.finditer(command) if m.group(1) or m.group(2)), "80")
        lines += [
            f"for _ in $(seq {SERVER_WAIT_S * 5}); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && break;"
            " sleep 0.2; done",
            f"seen=$(wc -c < {log})",
            f"echo {_BEGIN}",
            f"( {command} ) 2>&1",
            f'echo "{_RC}=$?"',
            "sleep 0.3",
            f'tail -c +$((seen + 1)) {log}; echo; echo "{_END}"',
        ]
    lines += ["kill $server 2>/dev/null", f"rm -f {log}", "exit 0"]
    budget = timeout_s * len(asking) + SERVER_WAIT_S
    result = _script(runner, copy, venv, "\n".join(lines), budget)
    answered = _ASKED.findall(result.output)
    out: list[ReadmeCommand] = []
    for i, command in enumerate(asking):
        if i >= len(answered):
            out.append(ReadmeCommand(command, "not run", f"while {server} ran, the commands before it took too long"))
            continue
        output, code, logged = answered[i]
        if code != "0":
            out.append(ReadmeCommand(command, "fails", f"exit code {code} (while {server} ran): {output[-800:]}"))
        elif SERVER_ERROR.search(_ANSI.sub("", logged)):
            detail = f"the server ({server}) answered it with an error: {_ANSI.sub('', logged).strip()[-800:]}"
            out.append(ReadmeCommand(command, "fails", detail))
        else:
            out.append(ReadmeCommand(command, "works"))
    return out


def _script(chosen: Runner, copy: Path, venv: Path, script: str, timeout_s: float) -> ProcessResult:
    """Run ``script`` in the copy with its fresh environment first on ``PATH``."""
    exported = f'export VIRTUAL_ENV={shlex.quote(str(venv))} PATH={shlex.quote(str(venv / "bin"))}:"$PATH"\n'
    return chosen.run(["bash", "-c", exported + script], copy, timeout_s)


def _run(runner: Runner, copy: Path, venv: Path, command: str, timeout_s: float) -> ReadmeCommand:
    install = bool(INSTALL.match(command))
    chosen = runner.networked() if install else runner
    result = _script(chosen, copy, venv, command, INSTALL_TIMEOUT_S if install else timeout_s)
    if result.timed_out:
        return ReadmeCommand(command, "still running", f"still running after {timeout_s:.0f} s, then stopped")
    if result.returncode == 0:
        return ReadmeCommand(command, "works")
    return ReadmeCommand(command, "fails", f"exit code {result.returncode}: {result.output[-800:]}")


def with_commands(text: str, lacking: list[str], run: str) -> str:
    """A README's ``text`` with the commands it ``lacking`` put in, each in a ```bash block: the command that
    starts the program (``run``) just before the first block that asks it on this machine, the others (install,
    tests) before its first section, or at its end when it has none."""
    lines = text.splitlines()
    if run in lacking:
        start = next((at for _, held, at in _blocks(text) if LOCAL_URL.search("\n".join(held))), None)
        if start is not None:
            lines[start:start] = [
                "Start it first (it keeps running; send the requests below from another terminal):",
                "",
                "```bash",
                run,
                "```",
                "",
            ]
    rest = [c for c in lacking if c != run or not any(line.strip() == run for line in lines)]
    if rest:
        section = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
        before = [""] if section and lines[section - 1].strip() else []
        lines[section:section] = [*before, "## Install and test", "", "```bash", *rest, "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
