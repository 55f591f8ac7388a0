"""Declared dependencies: a third-party import the project does not declare is a check failure naming the
package to declare; the standard library, pytest and the project's own modules never are."""

from __future__ import annotations

import sys
from pathlib import Path

from l2mac.checks.dependencies import Declared, declaring, distribution_for
from l2mac.checks.python import find_code_issues
from l2mac.models.scripted import call, last_tool_return

from conftest import run_scripted

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def write(root: Path, files: dict[str, str]) -> list[str]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return sorted(files)


def dependency_issues(root: Path, files: dict[str, str]) -> list[str]:
    found = find_code_issues(root, write(root, files), types=False)
    return [str(i) for i in found if i.kind == "dependency"]


def test_import_names_map_to_the_distribution_to_install() -> None:
    assert distribution_for("yaml") == "PyYAML"
    assert distribution_for("bs4.element") == "beautifulsoup4"
    assert distribution_for("google.protobuf.message") == "protobuf"
    assert distribution_for("flask.views") == "flask"


def test_undeclared_third_party_imports_are_named_with_their_package(tmp_path: Path) -> None:
    files = {
        "app/__init__.py": "",
        "app/web.py": "import json\nimport yaml\nfrom flask import Flask\nfrom app import store\n",
        "app/store.py": "from collections import Counter\n",
        "tests/test_web.py": "import pytest\nfrom app.web import Flask\n",
    }
    issues = dependency_issues(tmp_path, files)
    assert len(issues) == 2, issues
    assert issues[0].startswith("app/web.py:2: dependency: imports 'yaml', a third-party package (PyYAML")
    assert 'write pyproject.toml with [project] name, version and dependencies = ["PyYAML"]' in issues[0]
    assert issues[1].startswith("app/web.py:3: dependency: imports 'flask'")


def test_an_import_from_a_wrong_module_name_points_to_the_module_that_defines_the_names(tmp_path: Path) -> None:
    # Seen with the 1.5B model: the tests imported solution.py's function "from project", were told to declare a
    # package named project, and answered with a pyproject.toml in a new project/ folder.
    files = {
        "solution.py": "from typing import List\n\n\ndef split(s: str) -> List[str]:\n    return s.split()\n",
        "tests/test_solution.py": "from project import split\n\n\ndef test_split():\n    assert split('a b')\n",
    }
    [issue] = dependency_issues(tmp_path, files)
    assert issue == (
        "tests/test_solution.py:1: dependency: imports split from 'project', which is not a module of this project, "
        "but solution.py defines it: import from 'solution'"
    )
    # a package's names that a project module happens to define as well are still the package's
    files["tests/test_solution.py"] = "from flask import Flask, jsonify\n"
    files["solution.py"] += "\n\ndef jsonify(x):\n    return x\n"
    [issue] = dependency_issues(tmp_path / "again", files)
    assert "imports 'flask', a third-party package" in issue
    files["tests/test_solution.py"] = "from project import split\n"
    del files["solution.py"]
    files["helpers.py"] = "X = 1\n"
    [issue] = dependency_issues(tmp_path / "other", files)
    assert issue.startswith("tests/test_solution.py:1: dependency: imports 'project', a third-party package")
    assert issue.endswith(
        "or, if 'project' was meant to be one of this project's modules, import that module by its name: helpers"
    )


def test_what_pyproject_or_requirements_declare_is_covered_in_any_spelling(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "app"\nversion = "0.1"\ndependencies = ["Flask>=3", "PyYAML"]\n'
        '[project.optional-dependencies]\ntest = ["hypothesis"]\n'
        '[dependency-groups]\ndev = ["Flask_SQLAlchemy", {include-group = "test"}]\n'
    )
    write(
        tmp_path,
        {"pyproject.toml": pyproject, "requirements.txt": "# pinned\nrequests==2.32.3  # http\n-r other.txt\n"},
    )
    declared = Declared.read(tmp_path)
    assert declared.sources == ("pyproject.toml", "requirements.txt")
    for module in ("flask", "yaml.loader", "hypothesis", "flask_sqlalchemy", "requests"):
        assert declared.covers(module), module
    assert not declared.covers("numpy")
    assert 'add "numpy" to the [project] dependencies' in declared.missing("numpy")


def test_a_pyproject_that_is_not_toml_is_reported_on_itself(tmp_path: Path) -> None:
    issues = dependency_issues(tmp_path, {"pyproject.toml": "[project\nname = 1\n", "app.py": "import json\n"})
    assert len(issues) == 1 and issues[0].startswith("pyproject.toml:1: dependency: not valid TOML (")


def test_a_step_told_of_an_undeclared_import_declares_it_and_passes(tmp_path: Path) -> None:
    # pygments is not well known to l2mac (well_known.yaml): the model is told to declare it
    code = "import pygments\n\n\ndef dump(data):\n    return pygments.__name__ + str(data)\n"
    test = "from app import dump\n\n\ndef test_dump():\n    assert dump(1) == 'pygments1'\n"
    pyproject = '[project]\nname = "app"\nversion = "0.1.0"\ndependencies = ["Pygments>=2"]\n'
    told: list[str] = []

    def declare(messages):  # the model reads the check report, then writes the declaration
        told.append(last_tool_return(messages))
        return call("write_files", {"files": [{"path": "pyproject.toml", "content": pyproject}]})

    replies = [
        call("submit_plan", {"steps": [{"title": "Dump", "instruction": "Write app.py with dump(data) as YAML."}]}),
        call(
            "write_files",
            {"files": [{"path": "app.py", "content": code}, {"path": "tests/test_app.py", "content": test}]},
        ),
        call("step_complete", {"summary": "dump written"}),
        declare,
        call("step_complete", {"summary": "dump written, PyYAML declared"}),
    ]
    result, script = run_scripted(tmp_path, replies, protocol="tools")
    assert script.remaining == 0
    assert "app.py:1: dependency: imports 'pygments'" in told[0] and '"pygments"' in told[0]
    assert result.ok, result.report
    assert [o.check_failures for o in result.outcomes] == [1]


def test_an_soa_lead_declares_what_her_modules_import(tmp_path: Path) -> None:
    from l2mac.checks.dependencies import with_requirements
    from l2mac.soa.tools import SkeletonArgs

    blocks: list[tuple[str | None, str]] = [
        ("app/core.py", "import yaml\n\n\ndef load(text: str) -> dict:\n    ...\n"),
        ("tests/test_core.py", "from app.core import load\n"),
        ("requirements.txt", "PyYAML\n\n"),
    ]
    args = SkeletonArgs.model_validate(SkeletonArgs.from_answer(blocks, ""))
    assert args.dependencies == ["PyYAML"] and [m.path for m in args.modules] == ["app/core.py"]
    (tmp_path / "requirements.txt").write_text("flask\n")
    assert with_requirements(tmp_path, ["flask", "PyYAML"]) == "flask\nPyYAML\n"
    assert with_requirements(tmp_path, ["flask", " "]) == ""  # nothing new: nothing to write


def test_a_url_or_path_requirement_is_refused_and_never_installed(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "flask\nhelper @ file:///tmp/helper\n"})
    declared = Declared.read(tmp_path)
    assert declared.requirements == ("flask",) and declared.covers("helper")  # declared, but not installable
    assert declared.problem_file == "requirements.txt" and "'helper @ file:///tmp/helper' is a direct reference" in (
        declared.problem
    )


def test_a_well_known_package_the_code_imports_is_declared_for_the_model_and_the_step_passes(tmp_path: Path) -> None:
    # Seen with the 1.5B model: told that notes/app.py imports flask undeclared, it spent the rest of a 25-minute
    # budget without writing pyproject.toml. A well-known package is declared as `uv add` would.
    code = "import yaml\nfrom jinja2 import Template\n\n\ndef dump(data):\n    return yaml.safe_dump(data)\n"
    test = "import numpy\nfrom app import dump\n\n\ndef test_dump():\n    assert dump({'a': 1}) == 'a: 1\\n'\n"
    replies = [
        call("submit_plan", {"steps": [{"title": "Dump", "instruction": "Write app.py with dump(data) as YAML."}]}),
        call(
            "write_files",
            {"files": [{"path": "app.py", "content": code}, {"path": "tests/test_app.py", "content": test}]},
        ),
        call("step_complete", {"summary": "dump written"}),
    ]
    result, script = run_scripted(tmp_path, replies, protocol="tools")
    assert script.remaining == 0
    assert result.ok, result.report
    assert [o.check_failures for o in result.outcomes] == [0]
    project = tomllib.loads((tmp_path / "ws" / "proj" / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == ["jinja2", "PyYAML"]
    assert project["optional-dependencies"] == {"test": ["numpy"]}  # only the tests import it
    assert project["name"] == "proj" and project["version"] == "0.1.0"


def test_declaring_edits_the_projects_own_declaration_and_keeps_what_it_holds(tmp_path: Path) -> None:
    text = '# the app\n[project]\nname = "app"  # ours\nversion = "1.2"\ndependencies = [\n    "requests>=2",\n]\n'
    (tmp_path / "pyproject.toml").write_text(text)
    path, new = declaring(tmp_path, {"requests", "flask.views"}, {"numpy"})
    assert path == "pyproject.toml"
    assert new.startswith('# the app\n[project]\nname = "app"  # ours\nversion = "1.2"\n')  # comments kept
    assert tomllib.loads(new)["project"]["dependencies"] == ["requests>=2", "flask"]  # requests was declared
    assert tomllib.loads(new)["project"]["optional-dependencies"] == {"test": ["numpy"]}
    (tmp_path / "pyproject.toml").write_text(new)
    assert declaring(tmp_path, {"flask"}, {"numpy"}) == ("", "")  # nothing new: nothing to write
    (tmp_path / "pyproject.toml").write_text("[project\n")
    assert declaring(tmp_path, {"flask"}) == ("", "")  # unreadable: left to the dependency check's report
    # shapes tomlkit cannot edit faithfully, and dependencies a build backend computes, are left as they are
    for shape in (
        'project = {name = "app", version = "1"}\n',
        'project.name = "app"\nproject.version = "1"\n',
        '[project]\nname = "app"\ndynamic = ["dependencies", "version"]\n',
    ):
        (tmp_path / "pyproject.toml").write_text(shape)
        assert declaring(tmp_path, {"flask"}, {"numpy"}) == ("", ""), shape
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "requirements.txt").write_text("requests\n")
    assert declaring(tmp_path, {"yaml"}) == ("requirements.txt", "requests\nPyYAML\n")  # all it has


def test_an_unknown_package_is_left_to_the_model(tmp_path: Path) -> None:
    # an import name l2mac does not know may be a project module under a wrong name, or a typo's package
    from l2mac.checks.repairs import repair_written
    from l2mac.store import FileStore

    store = FileStore(tmp_path)
    store.write_text("app.py", "import flask\nimport notes_helper\n")
    logged: list[str] = []
    notes = repair_written(store, lambda paths: [], ["app.py"], lambda kind, **fields: logged.append(kind))
    assert notes == ["Declared flask in pyproject.toml, which the code imports (it is installed for the checks)"]
    assert logged == ["dependencies_declared"]
    assert tomllib.loads(store.read_text("pyproject.toml"))["project"]["dependencies"] == ["flask"]
    assert [i.message for i in find_code_issues(tmp_path, ["app.py", "pyproject.toml"], types=False)] == [
        "imports 'notes_helper' (the package notes_helper), which pyproject.toml does not declare: add "
        '"notes_helper" to the [project] dependencies (or to a test group when only the tests use it); or, if '
        "'notes_helper' was meant to be one of this project's modules, import that module by its name: app"
    ]
