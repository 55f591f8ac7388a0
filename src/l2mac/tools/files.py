"""File-store tools: list, view (line ranges, paged), write whole files, exact edits, delete."""

from __future__ import annotations

from pydantic import BaseModel, Field

from l2mac.checks.env import ToolEnv
from l2mac.tools.base import Tool
from l2mac.types import ToolResult


class NoArgs(BaseModel):
    pass


def list_files(_: NoArgs, env: ToolEnv) -> ToolResult:
    files = env.store.list_files()
    if not files:
        return ToolResult("The project is empty.")
    return ToolResult("\n".join(files))


class FileRange(BaseModel):
    path: str = Field(description="File path relative to the project root.")
    start_line: int | None = Field(default=None, ge=1, description="First line to show (1-based).")
    end_line: int | None = Field(default=None, ge=1, description="Last line to show (inclusive).")


class ViewArgs(BaseModel):
    files: list[FileRange] = Field(min_length=1, description="Files to view, each with an optional line range.")


def view_files(args: ViewArgs, env: ToolEnv) -> ToolResult:
    budget = env.max_output_chars
    parts: list[str] = []
    ok = True
    for fr in args.files:
        try:
            piece = env.store.read_lines(fr.path, fr.start_line, fr.end_line)
        except (FileNotFoundError, OSError, ValueError) as e:
            parts.append(f"--- {fr.path}: error: {e}")
            ok = False
            continue
        lines = piece.text.splitlines()
        shown: list[str] = []
        used = 0
        for offset, line in enumerate(lines):
            numbered = f"{piece.start_line + offset:>5}| {line}"
            if used + len(numbered) + 1 > budget and shown:
                break
            shown.append(numbered)
            used += len(numbered) + 1
        last = piece.start_line + len(shown) - 1
        header = f"--- {fr.path} (lines {piece.start_line}-{last} of {piece.total_lines})"
        parts.append(header + ("\n" + "\n".join(shown) if shown else "\n(empty file)"))
        budget -= used
        if last < piece.end_line:
            parts.append(f"[output limit reached: call view_files with start_line={last + 1} to see more]")
            break
    return ToolResult("\n".join(parts), ok=ok)


class FileContent(BaseModel):
    # no example path here: a small model writes the example's path instead of the one its step names
    path: str = Field(description="File path relative to the project root: the path the step names for it.")
    content: str = Field(description="The complete new content of the file.")


class WriteArgs(BaseModel):
    files: list[FileContent] = Field(min_length=1, description="Files to create or overwrite, whole.")


def _issues_note(env: ToolEnv, paths: list[str]) -> tuple[str, bool]:
    issues = env.check_files(paths)
    if not issues:
        return "", True
    blocking = any(i.blocking for i in issues)
    lines = "\n".join(str(i) for i in issues[:30])
    more = f"\n... and {len(issues) - 30} more" if len(issues) > 30 else ""
    return f"\nChecks found problems, fix them:\n{lines}{more}", not blocking


def write_files(args: WriteArgs, env: ToolEnv) -> ToolResult:
    done: list[str] = []
    for f in args.files:
        is_new = env.store.write_text(f.path, f.content)
        n = len(f.content.splitlines())
        done.append(f"{'Created' if is_new else 'Overwrote'} {f.path} ({n} lines)")
    note, clean = _issues_note(env, [f.path for f in args.files])
    return ToolResult("\n".join(done) + note, ok=clean)


class EditArgs(BaseModel):
    path: str = Field(description="File to edit, relative to the project root.")
    old_text: str = Field(description="Exact text to replace; must occur exactly once in the file.")
    new_text: str = Field(description="Text to put in its place.")


def edit_file(args: EditArgs, env: ToolEnv) -> ToolResult:
    env.store.replace_once(args.path, args.old_text, args.new_text)
    note, clean = _issues_note(env, [args.path])
    return ToolResult(f"Edited {args.path}." + note, ok=clean)


class DeleteArgs(BaseModel):
    paths: list[str] = Field(min_length=1, description="Files to delete, relative to the project root.")


def delete_files(args: DeleteArgs, env: ToolEnv) -> ToolResult:
    for p in args.paths:
        env.store.delete(p)
    return ToolResult(f"Deleted {', '.join(args.paths)}.")


LIST_FILES = Tool("list_files", "List every file in the project.", NoArgs, list_files)
VIEW_FILES = Tool(
    "view_files",
    "Show files with line numbers; give start_line/end_line to read part of a big file.",
    ViewArgs,
    view_files,
)
WRITE_FILES = Tool(
    "write_files",
    "Create or overwrite whole files. Always give the complete content; Python files are checked after writing.",
    WriteArgs,
    write_files,
)
EDIT_FILE = Tool(
    "edit_file",
    "Replace one exact piece of text in a file (it must occur exactly once) with new text.",
    EditArgs,
    edit_file,
)
DELETE_FILES = Tool("delete_files", "Delete files.", DeleteArgs, delete_files)
