"""Programs that serve: a web app is started as its user would start it, asked for the routes its step names,
and stopped; an answer of 500 or more, or none at all, is a failed check.

A framework's test client never starts the program, so tests can pass while ``python app.py`` crashes at start
(a missing template folder, a port argument of the wrong type, a reloader that imports the wrong module). The
program runs under the same runner as the tests, on the project's interpreter; under bubblewrap it has a network
namespace of its own, loopback only, so any port it picks is free and nothing reaches out. Which port it listens
on is read from the kernel, not guessed (see ``serve_driver.py``). 4xx answers count as answers: a step's
``POST /items`` sent with an empty JSON body may rightly be refused.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from importlib.resources import files as package_files
from pathlib import Path

from l2mac.checks.layout import code_trees, module_name
from l2mac.checks.runner import Runner

#: modules a program that serves HTTP imports
SERVER_MODULES = frozenset(
    {"flask", "fastapi", "django", "bottle", "aiohttp", "tornado", "starlette", "sanic", "falcon", "http.server"}
)
ROUTE = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE)\s+(/[^\s,;)'\"`]*)")
PARAMETER = re.compile(r"<[^>/]*>|\{[^}/]*\}|:\w+")  # /items/<int:id>, /items/{id}, /items/:id
WAIT_S = 20.0


@dataclass(frozen=True)
class Served:
    """What starting the program and asking it gave."""

    command: tuple[str, ...]
    port: int | None
    exited: int | None
    answers: tuple[tuple[str, str, int | str], ...] = ()
    output: str = ""

    @property
    def ok(self) -> bool:
        return self.port is not None and all(isinstance(a, int) and a < 500 for _, _, a in self.answers)

    def report(self) -> str:
        run = " ".join(["python", *self.command[1:]])
        if self.port is None:
            how = f"it exited with code {self.exited}" if self.exited is not None else f"within {WAIT_S:.0f} s"
            return f"The program that serves was started with `{run}` and never listened on a port ({how}).\n" + (
                f"Its output:\n{self.output.strip() or '(none)'}"
            )
        asked = "\n".join(f"  {m} {p} -> {a}" for m, p, a in self.answers)
        return (
            f"The program that serves was started with `{run}` (it listened on port {self.port}) and asked for "
            f"the routes this step names:\n{asked}\nAn answer of 500 or more, or none, is a bug in the program. "
            f"Its output:\n{self.output.strip() or '(none)'}"
        )


def routes(instruction: str) -> list[tuple[str, str]]:
    """The requests a step names ("GET /items", "DELETE /items/<id>"), path parameters given the value 1."""
    found = [(m, PARAMETER.sub("1", p.rstrip(".").rstrip(":"))) for m, p in ROUTE.findall(instruction)]
    return list(dict.fromkeys(found)) or [("GET", "/")]


def _imports(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return {n for n in names for m in SERVER_MODULES if n == m or n.startswith(m + ".")}


def has_main(tree: ast.Module) -> bool:
    """Whether the module runs as a program: it has an ``if __name__ == "__main__":`` block."""
    return any(is_main_guard(node) for node in tree.body)


def is_main_guard(node: ast.stmt) -> bool:
    """Whether ``node`` is an ``if __name__ == "__main__":`` block."""
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)


def entry_command(sources: dict[str, str], python: str) -> list[str] | None:
    """How a user starts the program, or None when the project serves nothing: ``manage.py runserver`` for
    Django; else the program file with a ``__main__`` block in a project that imports a server module; else
    ``flask --app`` for a module that makes a Flask ``app``."""
    trees = code_trees(sources)
    serving = {path: found for path, tree in trees.items() if (found := _imports(tree))}
    if not serving:
        return None
    if "manage.py" in trees and any(m.startswith("django") for found in serving.values() for m in found):
        return [python, "manage.py", "runserver", "127.0.0.1:8000", "--noreload"]
    mains = sorted((p for p in serving if has_main(trees[p])), key=lambda p: (p.count("/"), p))
    if mains:
        return [python, mains[0]]
    for path, found in sorted(serving.items()):
        if "flask" in found and re.search(r"^app\s*=\s*Flask\(", sources[path], re.MULTILINE):
            return [python, "-m", "flask", "--app", module_name(path), "run", "--port", "8000"]
    return None


def serve_check(
    runner: Runner, root: Path, python: str, sources: dict[str, str], instruction: str, timeout_s: float
) -> Served | None:
    """Start the program that serves (None when the project has none), make the step's requests, stop it."""
    command = entry_command(sources, python)
    if command is None:
        return None
    driver = package_files("l2mac.checks").joinpath("serve_driver.py").read_text(encoding="utf-8")
    asked = routes(instruction)
    spec = {"command": command, "requests": asked, "wait_s": WAIT_S}
    # -I: the project's own files (an email.py, a json.py) must not stand in for the modules the driver imports
    argv = [python, "-I", "-c", driver, json.dumps(spec)]
    result = runner.run(argv, root, max(timeout_s, WAIT_S + 30 * len(asked)))
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
        answers = tuple((str(m), str(p), a if isinstance(a, int) else str(a)) for m, p, a in data["answers"])
        return Served(tuple(command), data["port"], data["exited"], answers, str(data["output"]))
    except (IndexError, ValueError, KeyError, TypeError):  # the driver itself did not finish: say what it said
        return Served(tuple(command), None, result.returncode, output=result.output[-3000:])
