"""Where a file sits in a Python project: whether pytest treats it as tests, and the module it is imported as."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path


def is_test_file(rel: str) -> bool:
    """A file pytest treats as tests or test support (test_*.py, *_test.py, conftest.py)."""
    name = rel.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py")


def module_name(rel: str) -> str:
    """The dotted module a project file is imported as (``src/`` layouts and packages included)."""
    parts = module_path(rel)
    return ".".join(parts[:-1] if parts and parts[-1] == "__init__" else parts)


def module_path(rel: str) -> tuple[str, ...]:
    """Module path parts of a file, without a leading ``src`` folder."""
    parts = Path(rel).with_suffix("").parts
    return parts[1:] if parts and parts[0] == "src" else parts


def code_trees(files: Mapping[str, str]) -> dict[str, ast.Module]:
    """The project's code modules among ``files`` (path -> text), parsed: Python files, not tests, that parse."""
    trees: dict[str, ast.Module] = {}
    for path, text in files.items():
        if path.endswith(".py") and not is_test_file(path):
            try:
                trees[path] = ast.parse(text)
            except SyntaxError:
                continue
    return trees
