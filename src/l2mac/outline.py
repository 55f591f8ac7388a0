"""What a specification says the project holds: the code files its file trees name, and what it says of each.

Specifications often draw the project as a file tree (``├── pkg`` / ``│   └── module.py``, as ``tree`` prints it)
and then describe each module under a line that names it (```module.py`:`` followed by a list of its classes
and functions). A plan that follows the specification owns every one of those files, with what is said of it;
this module reads them out, so the planner can check and repair a plan against them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from l2mac.checks.layout import is_test_file

#: a line of a drawn file tree: its prefix (``│   `` per level), the branch, and the entry's name
_TREE_LINE = re.compile(r"^(?P<prefix>[│|\s]*)(?:├──|└──|\|--|`--|\+--)\s*(?P<name>[^\s#]+)")
#: a line that names one file and nothing else (a heading of what is said of it): `name.py`: or **name.py**
_HEADING = re.compile(r"^\s*(?:#+\s*)?[`*]*(?P<path>[\w./-]+\.py)[`*]*\s*:?\s*$")


@dataclass(frozen=True)
class SpecFile:
    path: str  # as the tree places it (``pkg/module.py``), or as the heading names it when no tree does
    description: str  # what the specification says of it under its heading ("" when nothing)


def tree_paths(text: str) -> list[str]:
    """Every file a drawn tree in ``text`` names, with the folders above it (``pkg/module.py``), in order. An
    entry's depth is the rank of its branch's column among its tree's (whatever the indent width); an entry is
    a folder when the next line of its tree is deeper."""
    trees: list[list[tuple[int, str]]] = [[]]
    for line in text.splitlines():
        m = _TREE_LINE.match(line)
        if m is not None:
            trees[-1].append((len(m.group("prefix")), m.group("name")))
        elif trees[-1] and (not line.strip() or line.lstrip().startswith("```")):
            trees.append([])  # a tree ended
    paths: list[str] = []
    for columns in trees:
        rank = {c: i for i, c in enumerate(sorted({c for c, _ in columns}))}
        entries = [(rank[c], name) for c, name in columns]
        folders: list[str] = []
        for i, (depth, name) in enumerate(entries):
            folders = folders[:depth]
            if (i + 1 < len(entries) and entries[i + 1][0] > depth) or name.endswith("/"):
                folders.append(name.rstrip("/"))
            else:
                paths.append("/".join([*folders, name]))
    return list(dict.fromkeys(paths))


def described(text: str) -> dict[str, str]:
    """What ``text`` says under each line that only names a code file: ``{name as written: the lines under it}``,
    up to a blank line followed by text that is not a list item, or the next such heading."""
    out: dict[str, str] = {}
    lines = _outside_fences(text)
    i = 0
    while i < len(lines):
        m = _HEADING.match(lines[i])
        if m is None:
            i += 1
            continue
        body: list[str] = []
        i += 1
        while i < len(lines) and _HEADING.match(lines[i]) is None:
            line = lines[i]
            if not line.strip():
                following = next((x for x in lines[i + 1 :] if x.strip()), "")
                if not re.match(r"^\s*(?:[-*+]|\d+[.)])\s", following):
                    break
            body.append(line.rstrip())
            i += 1
        out.setdefault(m.group("path"), "\n".join(body).strip())
    return out


def _outside_fences(text: str) -> list[str]:
    """The lines of ``text`` with those inside fenced code blanked (a ``# name.py`` comment there is no heading;
    blank, so a description ends where a fence begins)."""
    out, inside = [], False
    for line in text.splitlines():
        fence = line.lstrip().startswith(("```", "~~~"))
        out.append("" if inside or fence else line)
        inside ^= fence
    return out


def code_files(text: str) -> list[SpecFile]:
    """The code files a specification names in its trees (tests and empty package markers left out) or under
    a heading of their own, each with what it says of it; a heading's bare name is matched to the tree's path
    with that name."""
    said = described(text)
    tree = [p for p in tree_paths(text) if p.endswith(".py")]
    files: dict[str, str] = {}
    for path in tree:
        files[path] = next((d for name, d in said.items() if same_file(path, name) and d), "")
    for name, description in said.items():
        if not any(same_file(p, name) for p in files):
            files[name] = description
    return [SpecFile(p, d) for p, d in files.items() if not is_test(p) and not (p.endswith("__init__.py") and not d)]


def same_file(a: str, b: str) -> bool:
    """The same file named from different roots: ``src/pkg/m.py``, ``pkg/m.py`` and ``m.py``."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def is_test(path: str) -> bool:
    return is_test_file(path) or "tests" in path.split("/")[:-1]


#: one entry of a file's description: ``- name(params): what it does`` (``def``/``class`` before the name, too)
#: an entry of a file's list of functions and classes: ``- name(params): what it does``
ENTRY = re.compile(
    r"^(?P<indent>\s*)[-*+]\s+(?P<kind>def\s+|class\s+)?(?P<name>[A-Za-z_]\w*)\((?P<params>[^()]*)\)\s*:?\s*(?P<doc>.*)$"
)


def interface(description: str) -> str | None:
    """The Python skeleton a file's description gives, when it lists the file's functions and classes as
    ``- name(params): what it does`` (a class's methods nested under it): each a stub whose docstring is what the
    description says, to be completed. None when the description is anything else, or nests entries under a
    function (then the names are the calls it makes, not a signature to keep)."""
    entries: list[tuple[bool, str, str, str, list[tuple[str, str, str]]]] = []  # (class?, name, params, doc, methods)
    for line in description.splitlines():
        m = ENTRY.match(line)
        if m is None:
            if not entries or not line.strip() or line.lstrip().startswith(("-", "*", "+")):
                return None
            entries[-1] = (*entries[-1][:3], f"{entries[-1][3]} {line.strip()}", entries[-1][4])  # a doc goes on
            continue
        name, params, doc = m["name"], m["params"].strip(), m["doc"].strip()
        if m["indent"]:
            if not entries or not entries[-1][0]:
                return None
            entries[-1][4].append((name, params, doc))
        else:
            entries.append(((m["kind"] or "").startswith("class"), name, params, doc, []))
    if not entries:
        return None
    blocks = []
    for is_class, name, params, doc, methods in entries:
        if not is_class:
            blocks.append(_stub(name, params, doc, ""))
            continue
        init = [("__init__", params, doc)] if params else []
        members = "\n".join(_stub(n, ", ".join(x for x in ("self", p) if x), d, "    ") for n, p, d in init + methods)
        blocks.append(f'class {name}:\n    """{_doc(doc)}"""\n' + (f"\n{members}" if members else ""))
    source = "\n\n\n".join(b.rstrip("\n") for b in blocks) + "\n"
    try:
        ast.parse(source)
    except SyntaxError:
        return None
    return source


def _stub(name: str, params: str, doc: str, indent: str) -> str:
    return f'{indent}def {name}({params}):\n{indent}    """{_doc(doc)}"""\n{indent}    ...\n'


def _doc(text: str) -> str:
    return text.replace('"""', "'''").replace("\\", "\\\\").strip() or "As the task specifies."
