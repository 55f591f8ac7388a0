"""A map of a repository for a prompt: its files, ranked by relevance to what is asked, with the classes and
functions of each Python file (signatures, no bodies), how its tests run, and the start of its README; cut to a
budget at any size, so a repository of thousands of files fits a small model's window.

Relevance is lexical and structural, as in aider's repository map: a file ranks by the words of the request
that its path and the names it defines share (rarer words count more), and a file that a relevant file imports
inherits part of its rank, since a change to one often needs the other.
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import PurePosixPath

from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.repairs import definition_span, imported_modules

#: share of a file's rank passed to each project module it imports
IMPORT_SHARE = 0.5
#: lines of the README shown
README_LINES = 15
#: room kept for the line that counts the files left out
TAIL_CHARS = 900
_WORD = re.compile(r"[A-Za-z][a-z0-9]*|[0-9]+")


def terms(text: str) -> set[str]:
    """The words of ``text``, lowercased, identifiers split (``load_csv``, ``CsvReader`` → load, csv, reader)."""
    return {w.lower() for w in _WORD.findall(text) if len(w) > 2}


def outline_of(path: str, text: str) -> list[str]:
    """What a file holds, in a few lines: a Python module's classes and functions, a markdown file's headings."""
    if path.endswith(".py"):
        return outline(text)
    if path.endswith((".md", ".markdown")):
        return [line.rstrip() for line in text.splitlines() if re.match(r"#{1,4} \S", line)]
    return []


def outline(source: str) -> list[str]:
    """The classes and functions a Python module defines, as signature lines (methods indented); [] when it does
    not parse."""
    return [line for _, line in numbered_outline(source)]


def numbered_outline(source: str, *, docs: bool = False) -> list[tuple[int, str]]:
    """:func:`outline`, each line with the 1-based line its definition begins on (decorators included); with
    ``docs``, each followed by the first line of its docstring (``  # ...``) where it has one."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines: list[tuple[int, str]] = []

    def said(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        doc = (ast.get_docstring(node) or "").strip().split("\n")[0].strip() if docs else ""
        return f"  # {doc[:100]}" if doc else ""

    def visit(body: list[ast.stmt], indent: str) -> None:
        for node in body:
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            if isinstance(node, ast.ClassDef):
                bases = ", ".join(ast.unparse(b) for b in node.bases)
                lines.append((first, f"{indent}class {node.name}{f'({bases})' if bases else ''}{said(node)}"))
                visit(node.body, indent + "    ")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
                prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
                lines.append((first, f"{indent}{prefix} {node.name}({ast.unparse(node.args)}){ret}{said(node)}"))

    visit(tree.body, "")
    return lines


def sources_named(source: str, text: str, max_lines: int = 120) -> list[str]:
    """The source of each top-level function and class of ``source`` (and method of a class) that ``text``
    names as a word, in file order, until ``max_lines`` are taken."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    words = set(re.findall(r"\w+", text))
    lines = source.splitlines()
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    nodes: list[ast.stmt] = [n for n in tree.body if isinstance(n, defs)]
    nodes += [m for n in tree.body if isinstance(n, ast.ClassDef) and n.name not in words for m in n.body]
    out: list[str] = []
    taken = 0
    for node in sorted((n for n in nodes if isinstance(n, defs) and n.name in words), key=lambda n: n.lineno):
        a, b = definition_span(node)  # with its decorators: sent back without them, they would be lost
        segment = "\n".join(lines[a:b])
        if segment and taken + segment.count("\n") + 1 <= max_lines:
            out.append(segment)
            taken += segment.count("\n") + 1
    return out


def imported(source: str) -> set[str]:
    """The modules a Python file imports by absolute name, and ``pkg.mod`` for ``from pkg import mod``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    members = {
        f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module for a in n.names
    }
    return imported_modules(tree) | members


def rank(files: Mapping[str, str], request: str) -> list[str]:
    """The paths of ``files`` (path → text), most relevant to ``request`` first; ties in path order."""
    wanted = terms(request)
    own = {p: terms(p) | terms(" ".join(outline_of(p, t))) for p, t in files.items()}
    df = Counter(w for words in own.values() for w in words & wanted)
    n = max(len(files), 1)
    score = {p: sum(math.log(1 + n / df[w]) for w in words & wanted) for p, words in own.items()}
    for path in [p for p in files if path_mentioned(p, request)]:
        score[path] += 10.0  # named outright
    modules = {module_name(p): p for p in files if p.endswith(".py")}
    inherited: defaultdict[str, float] = defaultdict(float)
    for path, text in files.items():
        if path.endswith(".py") and score[path] > 0:
            for name in imported(text):
                target = modules.get(name)
                if target is not None and target != path:
                    inherited[target] += IMPORT_SHARE * score[path]
    return sorted(files, key=lambda p: (-(score[p] + inherited[p]), p))


def path_mentioned(path: str, request: str) -> bool:
    """Whether ``request`` names ``path`` or its file name (``app.py``)."""
    return path in request or re.search(rf"(?<![\w/.-]){re.escape(PurePosixPath(path).name)}\b", request) is not None


def test_command(files: Mapping[str, str]) -> str:
    """How the repository's tests run, as far as its files say."""
    config = "\n".join(files.get(p, "") for p in ("pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini"))
    if "pytest" in config or any(is_test_file(p) and p.endswith(".py") for p in files):
        return "python -m pytest"
    if any(re.search(r"^\s*(?:import unittest|from unittest)", t, re.MULTILINE) for t in files.values()):
        return "python -m unittest"
    return "(no tests found)"


def file_entry(path: str, text: str) -> str:
    """One file for a map or a summary: its path and length, then what it defines (at most 40 lines)."""
    lines = [f"- {path} ({len(text.splitlines())} lines)", *(f"      {o}" for o in outline_of(path, text)[:40])]
    return "\n".join(lines)


def repository_map(files: Mapping[str, str], request: str, budget_chars: int) -> str:
    """The map of ``files`` for ``request`` in at most about ``budget_chars`` characters: the test command, the
    README's first lines, then each file (most relevant first) with its outline, then the files left out,
    counted by folder."""
    readme = next((p for p in sorted(files) if PurePosixPath(p).name.lower() in {"readme.md", "readme.rst"}), None)
    tests = sorted(p for p in files if is_test_file(p))
    head = [f"{len(files)} files; {len(tests)} test files; tests run with: {test_command(files)}"]
    if readme is not None:
        lines = files[readme].splitlines()[:README_LINES]
        head.append(f"{readme} begins:\n" + "\n".join(f"    {line}" for line in lines))
    out = "\n".join(head) + "\n\nFiles, the most relevant to the request first:\n"
    left: list[str] = []
    for path in rank(files, request):
        entry = file_entry(path, files[path])
        if left or len(out) + len(entry) + 1 > budget_chars - TAIL_CHARS:
            left.append(path)
            continue
        out += entry + "\n"
    if left:
        folders = Counter(str(PurePosixPath(p).parent) for p in left)
        shown = ", ".join(f"{folder}/ ({count})" for folder, count in sorted(folders.items())[:20])
        more = f" and {len(folders) - 20} more folders" if len(folders) > 20 else ""
        out += f"... and {len(left)} files less relevant, by folder: {shown}{more}\n"
    return out.rstrip() + "\n"
