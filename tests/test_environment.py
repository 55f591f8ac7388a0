"""The project's own environment: made when it first declares a dependency, installed once and reused while the
declarations stay the same; an install failure reaches the model with the installer's words, and the step
goes on. The installer is faked here (no network); tests/test_environment_index.py installs for real."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from l2mac.checks.environment import STAMP, VENV, ProjectEnvironment
from l2mac.checks.runner import SubprocessRunner
from l2mac.checks.sandbox import BubblewrapRunner
from l2mac.context import ContextBudget
from l2mac.control import ControlUnit, Step
from l2mac.domains import load_domain
from l2mac.models.client import ModelClient
from l2mac.models.scripted import ScriptedModel, call, last_tool_return
from l2mac.store import FileStore
from l2mac.tools import Toolbox, ToolEnv, tools_named
from l2mac.types import Instruction, StepStatus

PYPROJECT = '[project]\nname = "app"\nversion = "0.1.0"\ndependencies = [{deps}]\n'


class FakeInstaller:
    """Plays pip: ``venv`` makes a .venv whose python is l2mac's (so pytest is there); an install of a name in
    ``unknown`` fails as pip says it; every command is recorded."""

    def __init__(self, unknown: tuple[str, ...] = ()) -> None:
        self.unknown = unknown
        self.commands: list[list[str]] = []
        self.folders: list[Path] = []

    def __call__(self, argv: Sequence[str], cwd: Path, timeout_s: float) -> tuple[int, str]:
        self.commands.append(list(argv))
        self.folders.append(cwd)
        if "venv" in argv:
            venv = Path(argv[-1])
            (venv / "bin").mkdir(parents=True)
            (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
            python = venv / "bin" / "python"
            python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
            python.chmod(0o755)
            return 0, ""
        for name in self.unknown:
            if name in argv:
                return 1, f"ERROR: Could not find a version that satisfies the requirement {name}\n" + (
                    f"ERROR: No matching distribution found for {name}"
                )
        return 0, "Successfully installed " + " ".join(argv[argv.index("pytest") :])

    @property
    def installs(self) -> list[list[str]]:
        return [c[c.index("pytest") :] for c in self.commands if "pytest" in c]


def declare(root: Path, *deps: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(deps=", ".join(f'"{d}"' for d in deps)))


def test_a_project_that_declares_nothing_runs_on_l2macs_interpreter(tmp_path: Path) -> None:
    installer = FakeInstaller()
    env = ProjectEnvironment(tmp_path, install=installer, uv="")
    current = env.sync()
    assert current.python == sys.executable and not current.own and installer.commands == []
    assert not (tmp_path / VENV).exists()


def test_declared_dependencies_are_installed_once_and_reused_by_the_next_run(tmp_path: Path) -> None:
    declare(tmp_path, "PyYAML>=6")
    installer = FakeInstaller()
    env = ProjectEnvironment(tmp_path, install=installer, uv="")
    first = env.sync()
    assert first.own and first.python == str(tmp_path / VENV / "bin" / "python") and first.install_s >= 0
    assert installer.installs == [["pytest", "PyYAML>=6"]] and (tmp_path / VENV / STAMP).is_file()
    pip = installer.commands[-1]
    assert pip[:6] == [sys.executable, "-I", "-m", "pip", "--python", first.python]  # isolated, into the venv
    assert tmp_path not in installer.folders  # never run in the project folder: its files are not picked up
    assert env.sync().own and len(installer.commands) == 2  # unchanged: nothing run
    again = ProjectEnvironment(tmp_path, install=installer, uv="")  # a second run on the same project
    assert again.sync().python == first.python and len(installer.commands) == 2
    declare(tmp_path, "PyYAML>=6", "requests")
    assert again.sync().requirements == ("PyYAML>=6", "requests")
    assert installer.installs[-1] == ["pytest", "PyYAML>=6", "requests"] and len(installer.commands) == 3


def test_uv_is_used_when_it_is_there(tmp_path: Path) -> None:
    declare(tmp_path, "requests")
    installer = FakeInstaller()
    ProjectEnvironment(tmp_path, install=installer, uv="/usr/bin/uv").sync()
    assert installer.commands[0][:2] == ["/usr/bin/uv", "venv"]
    assert installer.commands[1][:5] == ["/usr/bin/uv", "pip", "install", "--quiet", "--no-config"]
    assert all("--no-config" in c for c in installer.commands)  # never the project's [tool.uv] or uv.toml


def test_a_failed_install_keeps_the_installers_words_and_is_not_retried_unchanged(tmp_path: Path) -> None:
    declare(tmp_path, "flaskk")
    installer = FakeInstaller(unknown=("flaskk",))
    env = ProjectEnvironment(tmp_path, install=installer, uv="")
    failed = env.sync()
    assert "No matching distribution found for flaskk" in failed.problem and failed.installer == "pip"
    assert failed.python == sys.executable and not failed.own  # the code runs where it ran before
    assert env.sync().problem == failed.problem and len(installer.commands) == 2  # not tried again
    declare(tmp_path, "flask")
    fixed = env.sync()
    assert fixed.own and not fixed.problem and installer.installs[-1] == ["pytest", "flask"]


def test_a_step_told_its_install_failed_fixes_the_declaration_and_passes(tmp_path: Path) -> None:
    # pygments: a package l2mac does not declare by itself (well_known.yaml), so the declaration is the model's
    code = "import pygments\n\n\ndef dump(data):\n    return pygments.__name__ + str(data)\n"
    test = "from app import dump\n\n\ndef test_dump():\n    assert dump(1) == 'pygments1'\n"
    told: list[str] = []

    def fix(messages):  # reads the install failure, declares the right name
        told.append(last_tool_return(messages))
        fixed = PYPROJECT.format(deps='"Pygments"')
        return call("write_files", {"files": [{"path": "pyproject.toml", "content": fixed}]})

    files = [("app.py", code), ("tests/test_app.py", test), ("pyproject.toml", PYPROJECT.format(deps='"pygments-x"'))]
    replies = [
        call("write_files", {"files": [{"path": p, "content": c} for p, c in files]}),
        call("step_complete", {"summary": "dump written"}),
        fix,
        call("step_complete", {"summary": "dump written, Pygments declared"}),
    ]
    script = ScriptedModel(replies)
    store = FileStore(tmp_path / "proj")
    installer = FakeInstaller(unknown=("pygments-x",))
    environment = ProjectEnvironment(store.root, install=installer, uv="")
    domain = load_domain("codebase")
    env = ToolEnv(store=store, runner=SubprocessRunner(), environment=environment)
    tools = Toolbox(tools_named(domain.tools), env)
    unit = ControlUnit(ModelClient(script.model), tools, domain, ContextBudget(16000, 200), run_tests=True)
    step = Instruction(title="Dump", instruction="Write app.py with dump(data) returning YAML.", requires_tests=True)
    outcome = asyncio.run(unit.run_step(Step("YAML dumps", 1, 1, step, "")))
    assert "Installing the project's declared dependencies with pip failed" in told[0]
    assert "No matching distribution found for pygments-x" in told[0]
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert installer.installs == [["pytest", "pygments-x"], ["pytest", "Pygments"]]
    assert env.python == str(store.root / VENV / "bin" / "python")  # the tests ran on the project's venv


def test_a_venv_interpreter_is_shown_read_only_in_the_sandbox_wherever_it_lives(tmp_path: Path) -> None:
    # agreement samples run in a scratch copy under /tmp, which the sandbox replaces with an empty tmpfs
    venv = tmp_path / "proj" / VENV
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    argv = BubblewrapRunner("bwrap").argv([str(venv / "bin" / "python"), "-V"], tmp_path / "scratch")
    at = argv.index(str(venv))
    assert argv[at - 1] == "--ro-bind" and argv[at + 1] == str(venv)
    assert argv.index("--chdir") > at  # the scratch copy itself is still bound read-write, after it
    plain = BubblewrapRunner("bwrap").argv([sys.executable, "-V"], tmp_path / "scratch")
    assert str(venv) not in plain
    # in the project itself, its .venv is read-only to the code: what the next install runs is the installer's
    inside = BubblewrapRunner("bwrap").argv([sys.executable, "-V"], tmp_path / "proj")
    assert inside[inside.index("--bind") + 3 : inside.index("--bind") + 6] == ["--ro-bind", str(venv), str(venv)]
    assert str(venv) not in BubblewrapRunner("bwrap").networked().argv(["pip"], tmp_path / "proj")
