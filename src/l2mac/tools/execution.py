"""Tools that run code: a Python file, and the project's tests. Both go through the env's runner."""

from __future__ import annotations

from pydantic import BaseModel, Field

from l2mac.checks.env import ToolEnv
from l2mac.checks.output import trim_output
from l2mac.tools.base import Tool
from l2mac.types import ToolResult


class RunPythonArgs(BaseModel):
    path: str = Field(description="Python file to run, relative to the project root.")
    args: list[str] = Field(default_factory=list, description="Command-line arguments.")
    timeout_s: float = Field(default=30, gt=0, le=300, description="Seconds before the program is killed.")


def run_python(args: RunPythonArgs, env: ToolEnv) -> ToolResult:
    target = env.store.resolve(args.path)
    if not target.is_file():
        return ToolResult(f"Error: {args.path}: no such file", ok=False)
    timeout = min(args.timeout_s, env.command_timeout_s)
    failed = _install_problem(env)
    result = env.runner.run([env.python, env.store.relative(target), *args.args], env.store.root, timeout)
    status = "timed out" if result.timed_out else f"exit code {result.returncode}"
    body = trim_output(result.output, env.max_output_chars) or "(no output)"
    return ToolResult(f"{failed}{status}\n{body}", ok=result.returncode == 0)


def _install_problem(env: ToolEnv) -> str:
    """The project's environment brought up to date first; why not, when its install failed."""
    installed = env.sync()
    return installed.failure() + "\n\n" if installed is not None and installed.problem else ""


class RunTestsArgs(BaseModel):
    paths: list[str] = Field(default_factory=list, description="Test files or folders; empty runs all tests.")


def run_tests(args: RunTestsArgs, env: ToolEnv) -> ToolResult:
    targets = [env.store.relative(env.store.resolve(p)) for p in args.paths]
    failed = _install_problem(env)
    outcome = env.test_run(targets=targets)
    return ToolResult(failed + outcome.report(env.max_output_chars), ok=outcome.ok and not failed)


RUN_PYTHON = Tool("run_python", "Run a Python file of the project and show its output.", RunPythonArgs, run_python)
RUN_TESTS = Tool("run_tests", "Run the project's pytest tests and show the result.", RunTestsArgs, run_tests)
