"""The fenced-file format, both ways: files shown to a model as their path and a fenced block, and files read
back from an answer written that way.

A small model writes far better code in a fenced block under its file name than as a JSON-escaped string in a
tool call. The name may be on the line before the fence, or a comment on the block's first line; a Markdown
block may hold fenced examples of its own; one block may hold several ``# path`` files.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from l2mac.store import FileStore

_FENCE = re.compile(r"```[\w+-]*[^\n]*\n(.*?)```", re.DOTALL)
_PATH = r"([\w][\w./-]*\.(?:py|md|txt|json|toml|cfg|ini|yaml|yml|html|css|js|sh))"
_BEFORE = re.compile(r"(?:^|[\s*`'\"(:])" + _PATH + r"[\s*`'\"):]*$")
_ANY_PATH = re.compile(r"(?<![\w/.-])" + _PATH + r"(?![\w/-])")
_FIRST_LINE = re.compile(r"^\s*(?:#|//|<!--)\s*(?:file(?:name)?\s*:\s*)?" + _PATH + r"\s*(?:-->)?\s*$", re.I)


def fenced_files(text: str) -> list[dict[str, str]]:
    """``[{"path", "content"}]`` for each fenced block whose file name is given."""
    files: dict[str, str] = {}
    for path, body in fenced_blocks(text):
        if path is not None:
            files[path] = body
    return [{"path": p, "content": c} for p, c in files.items()]


def unnamed_blocks(text: str, lang: str = "python") -> list[str]:
    """The bodies of fenced blocks that name no file (``lang`` blocks, or blocks with no language)."""
    out = []
    for block in blocks(text):
        if block.tag in ("", lang) and block.body.strip() and _named(text, block) is None:
            out.append(_body(block))
    return out


@dataclass(frozen=True)
class _Block:
    """One fenced block of an answer: where its opening fence starts, its info string (lower case), its text."""

    start: int
    tag: str
    body: str


#: a line that opens a fenced block inside a Markdown block: a fence with an info string ("```sh")
_INNER_OPEN = re.compile(r"^\s*```+[\w+-]+")
#: a line that is only a fence: closes the innermost open block
_BARE_FENCE = re.compile(r"^\s*```+\s*$")


def blocks(text: str) -> list[_Block]:
    """The fenced blocks of ``text``. A ``markdown`` block may hold fenced blocks of its own (a README's
    examples): they are part of its text, and only the fence that closes it ends it (seen: README.md cut
    at "To install the todo app, run:", the line before its first ```sh example)."""
    out: list[_Block] = []
    pos = 0
    while m := _FENCE.search(text, pos):
        tag = m.group(0)[3:].split("\n", 1)[0].strip().lower()
        body, pos = m.group(1), m.end()
        if tag in ("markdown", "md"):
            body, pos = _markdown_body(text, m.start(1))
        out.append(_Block(m.start(), tag, body))
    return out


def _markdown_body(text: str, begin: int) -> tuple[str, int]:
    """The text of a Markdown block whose body starts at ``begin``, and where its closing fence ends; an
    unclosed block runs to the end of ``text``."""
    depth, at = 0, begin
    for line in text[begin:].splitlines(keepends=True):
        if _BARE_FENCE.match(line):
            if depth == 0:
                return text[begin:at], at + len(line.rstrip("\n"))
            depth -= 1
        elif _INNER_OPEN.match(line):
            depth += 1
        at += len(line)
    return text[begin:], len(text)


def in_markdown(begun: str) -> bool:
    """Whether an answer begun as ``begun`` is inside a Markdown block: its last fence opens one."""
    fences = [line.strip() for line in begun.splitlines() if line.lstrip().startswith("```")]
    return bool(fences) and fences[-1].lstrip("`").strip().lower() in ("markdown", "md")


@dataclass
class BlockEnd:
    """Watches the text of a Markdown block as it streams (an answer begun inside one) for the fence that closes
    it: the fences of the block's own examples open and close in pairs. :attr:`cut` is where that fence's line
    begins. A stop at the first fence ended a README before its first example (seen on the notes API at
    c78c993: "To install this project, run the following command in your terminal:", and no command)."""

    text: str = ""
    cut: int | None = None
    _depth: int = 0
    _checked: int = 0  # the text before this offset is whole lines, already read

    def feed(self, piece: str) -> bool:
        """Add the next piece of the answer; True once the block has closed."""
        if self.cut is not None:
            return True
        self.text += piece
        while (end := self.text.find("\n", self._checked)) >= 0:
            line = self.text[self._checked : end]
            if _INNER_OPEN.match(line):
                self._depth += 1
            elif _BARE_FENCE.match(line):
                if not self._depth:
                    self.cut = self._checked
                    return True
                self._depth -= 1
            self._checked = end + 1
        return False


def _body(block: _Block) -> str:
    """A block's text, without the indent every line shares: a block inside a Markdown list item comes
    indented, and a small model then copies that indent into every later answer (seen: "unexpected indent"
    at line 1 of a test file, eight answers in a row)."""
    return textwrap.dedent(block.body)


#: the tags of a shell block: what it holds are commands, never a file's text (but a shell script's)
_SHELL_TAGS = frozenset({"bash", "sh", "shell", "console", "zsh", "terminal"})


def _named(text: str, block: _Block) -> str | None:
    """The file a block is the text of: named on its first line, or on the line before it. A shell block is
    commands: it names only a shell script (seen on the notes API at 4958ca5: "or if you have a
    `requirements.txt` file:" above a bash block of `python -m pip install -r requirements.txt` made that line a
    requirements.txt, and the README's install command failed on it)."""
    path = _named_by_text(text, block)
    if path is not None and block.tag in _SHELL_TAGS and not path.endswith(".sh"):
        return None
    return path


def _named_by_text(text: str, block: _Block) -> str | None:
    lines = block.body.splitlines()
    if lines and (first := _FIRST_LINE.match(lines[0])):
        return first.group(1)
    before = text[: block.start].rstrip().splitlines()
    last = before[-1].strip() if before else ""
    if found := _BEFORE.search(last):
        return found.group(1)
    if last.endswith(":") and len(named := set(_ANY_PATH.findall(last))) == 1:
        return str(named.pop())  # "Here is the corrected `todo/core.py` file:"
    return None


def fenced_blocks(text: str) -> list[tuple[str | None, str]]:
    """Each fenced block with the file it names (or None)."""
    out: list[tuple[str | None, str]] = []
    for block in blocks(text):
        path = _named(text, block)
        if path and ".." not in path.split("/"):
            out += _split_concatenated(path.removeprefix("./"), _body(block))
        else:
            out.append((None, _body(block)))
    return out


def _split_concatenated(path: str, body: str) -> list[tuple[str | None, str]]:
    """One block holding several files, each introduced by a ``# path`` comment line, split into them."""
    pieces: list[tuple[str | None, str]] = []
    current: str | None = path
    lines: list[str] = []
    for line in body.splitlines(keepends=True):
        found = _FIRST_LINE.match(line.rstrip("\n"))
        if found and lines and found.group(1) != current and any(x.strip() for x in lines):
            pieces.append((current, "".join(lines)))
            current, lines = found.group(1), []
        lines.append(line)
    pieces.append((current, "".join(lines)))
    return pieces


def fence_lang(path: str) -> str:
    """The fence's language tag for ``path`` (``python`` for ``x.py``), or none."""
    return {"py": "python", "md": "markdown", "json": "json", "toml": "toml", "yaml": "yaml", "yml": "yaml"}.get(
        path.rsplit(".", 1)[-1], ""
    )


def fenced_file(path: str, text: str) -> str:
    """``path`` on a line of its own, then ``text`` in a fenced block: how a file is shown to a model."""
    return f"{path}\n```{fence_lang(path)}\n{text.rstrip()}\n```"


#: files named without their content, at most, when the project does not fit: the most relevant first
MAX_LISTED = 60


def show_files(
    store: FileStore,
    budget_chars: int,
    hide: Callable[[str], bool] | None = None,
    rank: Callable[[dict[str, str]], list[str]] | None = None,
    view: Callable[[str, str], str | None] | None = None,
    shown_as: Mapping[str, str] | None = None,
) -> str:
    """Each project file as its path and a fenced block, in path order, until ``budget_chars`` is spent; the rest
    are named with their length (a model reads them with a ranged read). Files for which ``hide`` is true are
    left out. When they do not all fit (a repository l2mac did not write), they come in ``rank``'s order (the
    most relevant first), and at most :data:`MAX_LISTED` are named. ``view`` may show a file otherwise than
    whole (a long module as its outline): what it returns for a path and text, unless None. ``shown_as`` gives
    files a text to show in place of theirs (a function being rewritten, without its old body)."""
    files = {p: (shown_as or {}).get(p, t) for p, t in store.snapshot().items() if hide is None or not hide(p)}
    unreadable = [p for p in store.list_files() if p not in files and (hide is None or not hide(p))]
    order = sorted(files)
    if rank is not None and sum(len(fenced_file(p, t)) for p, t in files.items()) > budget_chars:
        order = rank(files)
    shown: list[str] = []
    listed: list[str] = []
    used = 0
    for path in order:
        block = (view(path, files[path]) if view is not None else None) or fenced_file(path, files[path])
        if used + len(block) > budget_chars:
            listed.append(f"{path} ({len(files[path].splitlines())} lines, not shown)")
            continue
        shown.append(block)
        used += len(block)
    listed += unreadable
    if len(listed) > MAX_LISTED:
        listed = [*listed[:MAX_LISTED], f"... and {len(listed) - MAX_LISTED} more files"]
    parts = shown + ([("Other files:\n" + "\n".join(f"- {p}" for p in listed))] if listed else [])
    return "\n\n".join(parts) or "(no files yet)"
