"""Reading a text-protocol answer into whole files to write: what a small model writes is repaired into what it
meant, and what would destroy work is refused with a note.

Pure functions of the answer and the file store; :mod:`l2mac.control.text` calls them.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from l2mac.checks.python import top_level_definitions
from l2mac.checks.repairs import definition_span, merge_definitions, python_files
from l2mac.errors import WorkspaceError
from l2mac.fenced import unnamed_blocks
from l2mac.store import FileStore

File = dict[str, str]
Log = Callable[..., None]

#: a block with fewer than this share of an existing file's lines (of at least FRAGMENT_MIN_LINES) is a fragment
FRAGMENT_SHARE = 0.5
FRAGMENT_MIN_LINES = 12
#: a Python file this long is changed by sending only the definitions added or changed (see long_files): a
#: small model sends a 466-line module back whole in minutes, cut off at its answer limit
LONG_FILE_LINES = 100


def long_files(store: FileStore, limit: int = 5) -> list[str]:
    """The project's longest Python files of at least LONG_FILE_LINES lines (at most ``limit``)."""
    sizes = {p: len(s.splitlines()) for p, s in python_files(store).items()}  # as split_fragments counts
    return sorted((p for p, n in sizes.items() if n >= LONG_FILE_LINES), key=lambda p: -sizes[p])[:limit]


def resolve_bare_names(store: FileStore, files: list[File], to_write: list[str], log: Log) -> list[File]:
    """A bare file name ("test_core.py") that is not a file but the name of exactly one project file (or of a
    file the step must write) means that file ("tests/test_core.py"); so does a path that differs from one only
    in letter case ("Tests/test_core.py")."""
    known = list(dict.fromkeys([*store.list_files(), *to_write]))
    out = []
    for f in files:
        path = f["path"]
        if not store.is_project_file(path) and path not in known:
            if "/" in path:
                same = [k for k in known if k.lower() == path.lower()]
            else:
                same = [k for k in known if k.rsplit("/", 1)[-1] == path]
            if len(same) == 1:
                log("recovered", recovery="bare_name_resolved", path=same[0])
                f = {"path": same[0], "content": f["content"]}
        out.append(f)
    return out


def place_unnamed_blocks(store: FileStore, text: str, files: list[File], requested: str | None, log: Log) -> list[File]:
    """Writes for code blocks that name no file: the one block of an answer to "write X" is X; a block of
    corrected functions is merged into the one file that defines them all."""
    blocks = unnamed_blocks(text)
    if not blocks:
        return []
    named = {f["path"] for f in files}
    if requested is not None and requested not in named and len(blocks) == 1 and not files:
        log("recovered", recovery="unnamed_block_is_the_requested_file", path=requested)
        return [{"path": requested, "content": blocks[0]}]
    out: list[File] = []
    sources = python_files(store)
    for block in blocks:
        merged = {p: m for p, src in sources.items() if p not in named and (m := merge_definitions(src, block))}
        if len(merged) == 1:
            path, content = merged.popitem()
            sources[path] = content
            out = [f for f in out if f["path"] != path] + [{"path": path, "content": content}]
            log("recovered", recovery="definitions_merged_into_file", path=path)
    return out


def split_fragments(store: FileStore, files: list[File]) -> tuple[list[File], list[str]]:
    """Whole files to write, and a note for each block that looks like a fragment of an existing file.

    Small models often answer with the few lines they changed under the file's name; writing that would
    destroy the rest of the file, so it is refused and the model is asked for the whole file (unless the block
    holds only definitions: they are put in place of those of the same name, and new ones added). A long file
    is always changed so when the block holds only definitions and imports, whatever its length, as the model
    is told to send only what it adds or changes there."""
    whole: list[File] = []
    notes: list[str] = []
    for f in files:
        try:
            old = len(store.read_text(f["path"]).splitlines())
        except (OSError, UnicodeError, ValueError, WorkspaceError):
            old = 0
        new = len(f["content"].splitlines())
        if old >= FRAGMENT_MIN_LINES and (new < old * FRAGMENT_SHARE or old >= LONG_FILE_LINES):
            merged = (
                merge_definitions(store.read_text(f["path"]), f["content"], add_new=True)
                if f["path"].endswith(".py")
                else None
            )
            if merged is not None:
                whole.append({"path": f["path"], "content": merged})
                notes.append(f"Your definitions were put in place of those of the same name in {f['path']}.")
                continue
            if new >= old * FRAGMENT_SHARE:  # a long file sent whole, or its definitions sent back unchanged
                current = store.read_text(f["path"])
                python = f["path"].endswith(".py") and _definitions_only(f["content"])
                unchanged = python and top_level_definitions(f["content"]) <= top_level_definitions(current)
                # sent back as it was, the file stays as it is and is read as sent: seen on ClassEval_19 at
                # 1ed18fc, a test file of 104 lines sent back twice, each answer read as no file, and the step
                # failed on "tests/test_solution.py was never written"
                whole.append({"path": f["path"], "content": current} if unchanged else f)
                continue
            if old >= LONG_FILE_LINES:
                notes.append(
                    f"Not saved: {f['path']} has {old} lines: change it by sending only the functions and classes "
                    "you add or change, each complete with its body, and the imports they need; nothing else."
                )
                continue
            notes.append(
                f"Not saved: {f['path']}: your block has {new} lines but the file has {old}; it looks like a "
                "fragment. Write the COMPLETE file."
            )
        else:
            whole.append(f)
    return whole, notes


def _definitions_only(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    return bool(tree.body) and all(isinstance(n, kinds) for n in tree.body)


def one_at_a_time(
    files: list[File], requested: str | None, to_write: list[str], written: set[str], log: Log
) -> tuple[list[File], list[str]]:
    """The files of an answer to "write X" that are kept: X and files the step does not name; a named file
    written ahead waits to be asked for (with X in view), and one already saved sent again instead of X is set
    aside. Returns the files kept and the paths set aside."""
    if requested is None:
        return files, []
    if any(f["path"] == requested for f in files):
        return [f for f in files if f["path"] == requested or f["path"] not in to_write or f["path"] in written], []
    set_aside = sorted({f["path"] for f in files} & written)
    if set_aside:
        log("recovered", recovery="rewrite_set_aside", paths=set_aside)
    return [f for f in files if f["path"] not in written], set_aside


def salvage_cut_file(old: str | None, cut: str) -> tuple[str, list[str]] | None:
    """What a Python file cut off at the answer's length limit still gives: its complete top-level statements,
    with what the file already held after them (the definitions, imports and statements of ``old`` the cut
    answer did not reach, in their order); and the definitions it kept from the answer. None when the answer
    completed no definition, or the result would not parse. Seen on DevBench: a 1.5B model rewrote a
    200-line module three times, cut off each time at 2,048 tokens, and each whole answer was dropped."""
    lines = cut.splitlines()
    starts = [i for i, line in enumerate(lines) if line[:1].strip() and not line.startswith((")", "]", "}"))]
    prefix: ast.Module | None = None
    for end in reversed(starts[1:]):  # the last statement begun may be the one cut
        try:
            prefix = ast.parse("\n".join(lines[:end]))
        except SyntaxError:
            continue
        kept_text = "\n".join(lines[:end]).rstrip() + "\n"
        break
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    kept = [n.name for n in prefix.body if isinstance(n, defs)] if prefix is not None else []
    if prefix is None or not kept:
        return None
    if old is None:
        return kept_text, kept
    try:
        old_tree = ast.parse(old)
    except SyntaxError:
        return kept_text, kept
    have = {_key(n) for n in prefix.body}
    old_lines = old.splitlines()
    rest = [n for n in old_tree.body if _key(n) not in have]
    imports = [n for n in rest if isinstance(n, (ast.Import, ast.ImportFrom))]
    after = ["\n".join(old_lines[slice(*definition_span(n))]) for n in rest if n not in imports]
    head = [ast.unparse(n) for n in imports]
    result = "\n".join(head) + ("\n" if head else "") + kept_text + "".join(f"\n\n{block}\n" for block in after)
    try:
        ast.parse(result)
    except SyntaxError:
        return None
    return result, kept


def _key(node: ast.stmt) -> str:
    """What makes two top-level statements the same: a definition's name, else the statement itself."""
    return node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else ast.unparse(node)
