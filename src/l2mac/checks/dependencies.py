"""Declared dependencies: every third-party module a project imports is declared where installers look for it.

A project that imports ``flask`` without declaring it runs only on the machine that wrote it. The declaration is
the project's ``pyproject.toml`` (``[project] dependencies``, any ``[project.optional-dependencies]`` group, PEP 735
``[dependency-groups]``), or a ``requirements.txt``. An import name is not always its distribution's name
(``yaml`` is PyYAML, ``bs4`` is beautifulsoup4): ``distributions.yaml`` holds the known differences, and any other
module is taken to be installed under its own name.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import tomlkit
import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
REQUIREMENTS = "requirements.txt"
#: modules every Python has, and pytest, with which l2mac runs the project's tests
PROVIDED = (
    frozenset(sys.stdlib_module_names) | frozenset(sys.builtin_module_names) | {"__future__", "pytest", "_pytest"}
)


@cache
def _known_distributions() -> dict[str, str]:
    text = files("l2mac.checks").joinpath("distributions.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    return {str(k): str(v) for k, v in data.items()}


def distribution_for(module: str) -> str:
    """The distribution to install for ``module`` (``yaml.loader`` → ``PyYAML``, ``flask`` → ``flask``)."""
    known = _known_distributions()
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if (name := ".".join(parts[:end])) in known:
            return known[name]
    return parts[0]


@cache
def _well_known() -> frozenset[str]:
    text = files("l2mac.checks").joinpath("well_known.yaml").read_text(encoding="utf-8")
    return frozenset(str(name) for name in yaml.safe_load(text))


def is_well_known(module: str) -> bool:
    """Whether l2mac declares ``module``'s distribution by itself (``well_known.yaml``)."""
    return module.split(".")[0] in _well_known()


def is_third_party(module: str) -> bool:
    """Neither the standard library nor pytest (the caller has ruled out the project's own modules)."""
    return module.split(".")[0] not in PROVIDED


@dataclass(frozen=True)
class Declared:
    """The distributions a project declares (canonical names), and where; ``problem`` when a file is unreadable."""

    names: frozenset[str] = frozenset()
    sources: tuple[str, ...] = ()
    #: the requirements from the index as written (PEP 508), in order, without repeats: what an installer is given
    requirements: tuple[str, ...] = ()
    problem: str = ""
    problem_file: str = ""

    @classmethod
    def read(cls, root: Path) -> Declared:
        requirements: list[str] = []
        origin: dict[str, str] = {}  # requirement -> the file that declares it (first seen)
        sources: list[str] = []
        problem = problem_file = ""
        if (root / PYPROJECT).is_file():
            sources.append(PYPROJECT)
            try:
                requirements += _valid(_pyproject_requirements(tomllib.loads((root / PYPROJECT).read_text("utf-8"))))
                origin.update(dict.fromkeys(requirements, PYPROJECT))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, TypeError, AttributeError) as e:
                problem, problem_file = f"not valid TOML ({e}): the project's dependencies are unknown", PYPROJECT
        if (root / REQUIREMENTS).is_file():
            sources.append(REQUIREMENTS)
            try:
                lines = (root / REQUIREMENTS).read_text("utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as e:
                problem, problem_file = f"cannot be read ({e})", REQUIREMENTS
            else:
                kept = (line.split(" #")[0].strip() for line in lines if not line.lstrip().startswith("-"))
                from_file = _valid(kept)
                origin.update({r: REQUIREMENTS for r in from_file if r not in origin})
                requirements += from_file
        unique = tuple(dict.fromkeys(requirements))
        names = frozenset(canonicalize_name(Requirement(r).name) for r in unique)
        direct = [r for r in unique if Requirement(r).url]  # name @ URL or path: built from anywhere, unsandboxed
        if direct and not problem:
            problem, problem_file = (
                f"{direct[0]!r} is a direct reference (a URL or a path): only packages from the package index are "
                "installed; declare it by its name on the index (and a version)",
                origin[direct[0]],
            )
        index = tuple(r for r in unique if r not in direct)
        return cls(names, tuple(sources), index, problem, problem_file)

    def covers(self, module: str) -> bool:
        return canonicalize_name(distribution_for(module)) in self.names

    def missing(self, module: str) -> str:
        """What to tell the model about an undeclared third-party ``module``."""
        top, dist = module.split(".")[0], distribution_for(module)
        if not self.sources:
            return (
                f"imports {top!r}, a third-party package ({dist} on the package index), and the project declares no "
                f'dependencies: write {PYPROJECT} with [project] name, version and dependencies = ["{dist}"]'
            )
        return (
            f"imports {top!r} (the package {dist}), which {' and '.join(self.sources)} does not declare: add "
            f'"{dist}" to the [project] dependencies (or to a test group when only the tests use it)'
        )


def declaring(root: Path, runtime: Iterable[str], test: Iterable[str] = ()) -> tuple[str, str]:
    """The declaration file and its new text with the distributions of the modules ``runtime`` (the code's) and
    ``test`` (imported by tests only) added: the project's ``pyproject.toml`` (``[project] dependencies``, and the
    ``test`` extra), edited in place with its formatting and comments kept, or made when the project has none;
    its ``requirements.txt`` when that is all it has. ``("", "")`` when nothing is new, or when the project's
    pyproject.toml cannot be read (the dependency check reports that)."""
    declared = Declared.read(root)
    new_runtime = _new_distributions(declared, runtime)
    new_test = [d for d in _new_distributions(declared, test) if d not in new_runtime]
    if not (new_runtime or new_test):
        return "", ""
    path = root / PYPROJECT
    if not path.is_file() and (root / REQUIREMENTS).is_file():
        return REQUIREMENTS, with_requirements(root, new_runtime + new_test)
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        edited = _declared_in(tomlkit.parse(text), _project_name(root), new_runtime, new_test)
        if edited is None:
            return "", ""
        after = tomllib.loads(edited)
        # an edit tomlkit cannot make faithfully (dotted keys, an inline [project]) is not made
        if after != _expected(tomllib.loads(text), after, new_runtime, new_test):
            return "", ""
    except (OSError, UnicodeDecodeError, ValueError, TypeError, tomlkit.exceptions.TOMLKitError):
        return "", ""
    return PYPROJECT, edited


def _declared_in(document: Any, name: str, runtime: list[str], test: list[str]) -> str | None:
    """``document`` with ``runtime`` and ``test`` declared, as text; None when its dependencies are dynamic (a
    build backend computes them: a static list beside would make the file invalid)."""
    project, new = document.get("project"), not document
    if project is None:
        project = tomlkit.table()
        project.update({"name": name, "version": "0.1.0"})
        document["project"] = project
    if not isinstance(project, dict) or "dependencies" in project.get("dynamic", []):
        return None
    if runtime:
        _extend(project, "dependencies", runtime)
    if test:
        extras = project.setdefault("optional-dependencies", tomlkit.table())
        if not isinstance(extras, dict):
            return None
        _extend(extras, "test", test)
    if new:  # a new file's project installs (pip install -e .) whatever its folders hold: no flat-layout refusal
        packages = tomlkit.table(is_super_table=True)
        packages["setuptools"] = {"packages": {"find": {"exclude": ["tests*"]}}}
        document["tool"] = packages
    return str(tomlkit.dumps(document))


def _expected(before: dict[str, Any], edited: dict[str, Any], runtime: list[str], test: list[str]) -> dict[str, Any]:
    """What the project's data must be after the edit: as it was, with the declarations added (and, for a new
    [project], the name and version the edit gave it)."""
    after: dict[str, Any] = json.loads(json.dumps(before))
    if not before:  # a new file, with the packaging it was given
        after["tool"] = edited.get("tool")
    project = after.setdefault("project", {})
    for key in ("name", "version"):
        if key not in project:
            project[key] = edited.get("project", {}).get(key)
    if runtime:
        project["dependencies"] = [*project.get("dependencies", []), *runtime]
    if test:
        extras = project.setdefault("optional-dependencies", {})
        extras["test"] = [*extras.get("test", []), *test]
    return after


def _project_name(root: Path) -> str:
    """A valid distribution name from the project folder's name (``notes_api`` -> ``notes-api``)."""
    return canonicalize_name(re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-._")) or "project"


def _new_distributions(declared: Declared, modules: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(distribution_for(m) for m in sorted(modules) if not declared.covers(m)))


def _extend(table: dict[str, Any], key: str, distributions: list[str]) -> None:
    array = table.get(key)
    if not isinstance(array, list):
        array = tomlkit.array()
        table[key] = array
    array.extend(distributions)


def with_requirements(root: Path, dependencies: list[str]) -> str:
    """The project's requirements.txt with ``dependencies`` added; empty when none of them is new."""
    path = root / REQUIREMENTS
    have = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    new = [d.strip() for d in dependencies if d.strip() and d.strip() not in have]
    return "\n".join([*have, *new]) + "\n" if new else ""


def _pyproject_requirements(data: dict[str, Any]) -> list[str]:
    project = data.get("project", {})
    found = list(project.get("dependencies", []))
    for group in project.get("optional-dependencies", {}).values():
        found += group
    for group in data.get("dependency-groups", {}).values():
        found += [r for r in group if isinstance(r, str)]  # an {include-group = ...} table names no package
    return [r for r in found if isinstance(r, str)]


def _valid(requirements: Iterable[str]) -> list[str]:
    valid: list[str] = []
    for text in requirements:
        try:
            Requirement(text)
        except InvalidRequirement:
            continue  # a blank line or a comment: nothing a module can be matched with
        valid.append(text)
    return valid
