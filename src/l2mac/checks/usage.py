"""The commands that install, test and run a project, as a user types them in its folder, worked out from its
files (never asked of the model): the README step is given them, and the README check then runs what the
README says.

Asked to choose ("`pip install -e .` for a pyproject.toml, else `-r requirements.txt`"), the 1.5B model wrote
both, and the README's own ``pip install -r requirements.txt`` failed on a project that had no such file; asked
for "the command that runs the program", it gave none for a Flask app, and then three ``curl`` lines that no
server answered (notes API at f1b9326).
"""

from __future__ import annotations

import sys

from l2mac.checks.dependencies import PYPROJECT, REQUIREMENTS
from l2mac.checks.layout import code_trees, is_test_file, module_name
from l2mac.checks.readme import LOCAL_URL
from l2mac.checks.serve import has_main
from l2mac.checks.web_apps import web_app

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def project_commands(files: dict[str, str]) -> dict[str, str]:
    """``install``, ``test`` and ``run``: each command the project's files support (a key is left out when none
    is): the editable install with its test extra from a pyproject.toml, else its requirements.txt; pytest when
    it has tests; its console script, its web app's framework command, or its program with a ``__main__``
    block."""
    commands: dict[str, str] = {}
    project = _pyproject(files)
    if project is not None and "project" in project:  # not a pyproject.toml that only configures tools
        extras = project.get("project", {}).get("optional-dependencies", {})
        commands["install"] = 'python -m pip install -e ".[test]"' if "test" in extras else "python -m pip install -e ."
    elif REQUIREMENTS in files:
        commands["install"] = f"python -m pip install -r {REQUIREMENTS}"
    if any(is_test_file(p) and p.endswith(".py") for p in files):
        commands["test"] = "python -m pytest"
    if run := _run_command(files, project):
        commands["run"] = run
    return commands


def _pyproject(files: dict[str, str]) -> dict[str, dict[str, dict[str, object]]] | None:
    if PYPROJECT not in files:
        return None
    try:
        return tomllib.loads(files[PYPROJECT])
    except tomllib.TOMLDecodeError:
        return None


def _run_command(files: dict[str, str], project: dict[str, dict[str, dict[str, object]]] | None) -> str:
    scripts = (project or {}).get("project", {}).get("scripts", {})
    if scripts:
        return f"{next(iter(scripts))} --help"
    trees = code_trees(files)
    if (app := web_app(trees)) is not None and (command := app.run_command()):
        return command
    mains = sorted((p for p, t in trees.items() if has_main(t)), key=lambda p: (p.count("/"), p))
    if not mains:
        return ""
    main = mains[0]
    if "/" not in main:
        return f"python {main}"
    return f"python -m {module_name(main).removesuffix('.__main__')}"


def lacking_commands(known: dict[str, str], given: list[str]) -> list[str]:
    """Of the project's commands (``known``, see :func:`l2mac.checks.usage.project_commands`), those a README's
    commands (``given``) need and lack: the install and test commands; the run command when the README asks
    a server on this machine (``curl http://localhost:5000/notes``) and starts none. The run command is otherwise
    the README's choice (a CLI's own example is as good as --help). Seen on the notes API at 5694d08: three
    curl lines and no command that started the app, so each failed."""
    wanted = [c for what, c in known.items() if what != "run"]
    if "run" in known and any(LOCAL_URL.search(c) for c in given):
        wanted.append(known["run"])
    return [c for c in wanted if c not in given]
