"""The file store: the run's memory. Every path is confined to the workspace; writes are atomic.

Paths come from the model, so each is checked: relative, no ``..``, no NUL, nothing under the reserved
``.git``/``.l2mac`` folders, and (after resolving symlinks) inside the workspace root.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from l2mac.errors import PathOutsideWorkspace, WorkspaceError

RESERVED_DIRS = frozenset({".git", ".l2mac"})
IGNORED_DIRS = frozenset({"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".venv", "node_modules"})
MAX_FILE_BYTES = 2_000_000
#: why a project path may not be read (second argument False) or written (True), or None when it may
Guard = Callable[[str, bool], str | None]


@dataclass(frozen=True)
class FileSlice:
    path: str
    text: str
    start_line: int
    end_line: int
    total_lines: int


class FileStore:
    """Files of one project, rooted at ``root``. ``revision`` grows with every change. ``guard`` refuses paths
    the model must not read or write (a repository's secrets, its lockfiles); a file it refuses to read is not
    listed either."""

    def __init__(self, root: Path, guard: Guard | None = None) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        self.guard = guard
        self.revision = 0
        self.changes: list[tuple[int, str, str]] = []  # (revision, "create" | "write" | "delete", path)

    # -- paths -------------------------------------------------------------------------------------------
    def resolve(self, path: str) -> Path:
        """The absolute path for a workspace-relative ``path``, or PathOutsideWorkspace with the reason."""
        if not isinstance(path, str) or not path.strip():
            raise PathOutsideWorkspace("empty path; give a path relative to the project root, e.g. 'src/app.py'")
        if "\x00" in path:
            raise PathOutsideWorkspace(f"{path!r}: NUL character in path")
        norm = path.strip().replace("\\", "/")
        if norm.startswith("/") or PureWindowsPath(path).drive or norm.startswith("~"):
            raise PathOutsideWorkspace(f"{path!r}: absolute paths are refused; use a path relative to the project root")
        parts = [p for p in PurePosixPath(norm).parts if p not in ("", ".")]
        if not parts:
            raise PathOutsideWorkspace(f"{path!r}: names the project root, not a file")
        if ".." in parts:
            raise PathOutsideWorkspace(f"{path!r}: '..' is refused; paths must stay inside the project")
        if parts[0] in RESERVED_DIRS:
            raise PathOutsideWorkspace(f"{path!r}: {parts[0]}/ is reserved for l2mac's own records")
        candidate = self.root.joinpath(*parts)
        real = Path(os.path.realpath(candidate))
        if real != self.root and self.root not in real.parents:
            raise PathOutsideWorkspace(f"{path!r}: resolves outside the workspace (through a symlink)")
        return candidate

    def _allowed(self, target: Path, write: bool) -> None:
        if self.guard is not None and (why := self.guard(self.relative(target), write)):
            raise WorkspaceError(why)

    def _changed(self, op: str, target: Path) -> None:
        self.revision += 1
        self.changes.append((self.revision, op, self.relative(target)))

    def changed_since(self, revision: int) -> list[str]:
        """Paths written after ``revision`` that still exist, sorted."""
        paths = {path for rev, _, path in self.changes if rev > revision}
        return sorted(p for p in paths if (self.root / p).is_file())

    def accesses_since(self, revision: int) -> dict[str, str]:
        """What happened to each path after ``revision``: ``created`` (new, and perhaps written again),
        ``written``, or ``deleted`` (when that was the last change)."""
        first: dict[str, str] = {}
        last: dict[str, str] = {}
        for rev, op, path in self.changes:
            if rev > revision:
                first.setdefault(path, op)
                last[path] = op
        return {
            p: "deleted" if last[p] == "delete" else "created" if first[p] == "create" else "written" for p in first
        }

    def relative(self, absolute: Path) -> str:
        return absolute.relative_to(self.root).as_posix()

    # -- reads -------------------------------------------------------------------------------------------
    def _walk(self) -> Iterator[str]:
        """Every file on disk in the project but caches, l2mac's records and git's (a worktree's ``.git`` is a
        file), and symlinks."""
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d not in RESERVED_DIRS | IGNORED_DIRS)
            for name in filenames:
                p = Path(dirpath) / name
                if name not in RESERVED_DIRS and not p.is_symlink():
                    yield self.relative(p)

    def list_files(self) -> list[str]:
        """Every file in the project the model may see, sorted, without caches and l2mac's records."""
        return sorted(p for p in self._walk() if self.guard is None or not self.guard(p, False))

    def opaque_files(self) -> list[str]:
        """The files :meth:`snapshot` does not hold (binary ones, and those the guard hides from the model): a
        scratch copy of the project needs them for its code to run as it does here."""
        out: list[str] = []
        for path in self._walk():
            if self.guard is not None and self.guard(path, False):
                out.append(path)
                continue
            with contextlib.suppress(OSError), (self.root / path).open("rb") as f:
                if b"\x00" in f.read(8192):
                    out.append(path)
        return sorted(out)

    def exists(self, path: str) -> bool:
        return self.resolve(path).is_file()

    def check_writable(self, path: str) -> None:
        """Raise WorkspaceError (with the reason) when ``path`` may not be written: outside the project, or a
        file the guard keeps (a repository's secrets, its lockfile)."""
        self._allowed(self.resolve(path), write=True)

    def is_project_file(self, path: str) -> bool:
        """Whether ``path`` (as the model gave it) is a project file. A path outside the workspace is not: it is
        refused when written, with an answer to the model, rather than raising here."""
        try:
            return self.exists(path)
        except WorkspaceError:
            return False

    def has_text(self, path: str, content: str) -> bool:
        """Whether the project file ``path`` holds exactly ``content`` (False when it is missing or unreadable)."""
        try:
            return self.read_text(path) == content
        except (OSError, UnicodeError, ValueError, WorkspaceError):
            return False

    def read_text(self, path: str) -> str:
        p = self.resolve(path)
        if not p.is_file():
            raise FileNotFoundError(f"{path}: no such file")
        self._allowed(p, write=False)
        data = p.read_bytes()
        if b"\x00" in data[:8192]:
            raise WorkspaceError(f"{path}: binary file, cannot be shown as text")
        return data.decode("utf-8", errors="replace")

    def read_lines(self, path: str, start_line: int | None = None, end_line: int | None = None) -> FileSlice:
        """Lines ``start_line``..``end_line`` (1-based, inclusive) of a text file."""
        lines = self.read_text(path).splitlines()
        total = len(lines)
        start = max(1, start_line or 1)
        end = min(total, end_line or total)
        return FileSlice(path, "\n".join(lines[start - 1 : end]), start, end, total)

    def snapshot(self) -> dict[str, str]:
        """All text files as ``{path: content}``."""
        out: dict[str, str] = {}
        for rel in self.list_files():
            try:
                out[rel] = self.read_text(rel)
            except WorkspaceError:
                continue
        return out

    # -- writes ------------------------------------------------------------------------------------------
    def write_text(self, path: str, content: str) -> bool:
        """Write a whole file atomically. Returns True if it was new."""
        target = self.resolve(path)
        self._allowed(target, write=True)
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise WorkspaceError(f"{path}: {len(data)} bytes is over the {MAX_FILE_BYTES}-byte limit for one file")
        if target.is_dir():
            raise WorkspaceError(f"{path}: is a directory")
        is_new = not target.exists()
        target.parent.mkdir(parents=True, exist_ok=True)
        # re-check after mkdir: a symlinked parent created meanwhile must not let the write escape
        self.resolve(path)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._changed("create" if is_new else "write", target)
        return is_new

    def replace_once(self, path: str, old: str, new: str) -> None:
        """Replace the one exact occurrence of ``old``; an error if it occurs zero or several times."""
        text = self.read_text(path)
        if not old:
            raise WorkspaceError("old text is empty; give the exact text to replace, copied from the file")
        count = text.count(old)
        if count == 0:
            raise WorkspaceError(
                f"{path}: the text to replace was not found. View the file and copy the text exactly, "
                "including indentation and whitespace."
            )
        if count > 1:
            raise WorkspaceError(
                f"{path}: the text to replace occurs {count} times; include more surrounding lines so it "
                "matches exactly once."
            )
        self.write_text(path, text.replace(old, new, 1))

    def delete(self, path: str) -> None:
        target = self.resolve(path)
        if not target.is_file() and not target.is_symlink():
            raise FileNotFoundError(f"{path}: no such file")
        self._allowed(target, write=True)
        target.unlink()
        self._changed("delete", target)
        parent = target.parent
        while parent != self.root and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


#: what is never committed: l2mac's records, the project's environment, caches
_NOT_COMMITTED = (*(f"{d}/" for d in sorted(IGNORED_DIRS | {".l2mac"})), "*.pyc")


class GitHistory:
    """A git repository inside the workspace with one commit per step, so any step can be diffed or undone. In a
    git worktree (a change to a repository l2mac did not write) the commits go to the worktree's branch.

    If git is not installed the history is disabled (``enabled`` is False) and the run goes on.
    """

    #: l2mac's identity, and none of the repository's hooks (a worktree shares the user's: a formatter's
    #: pre-commit hook that changes files fails the commit, and the step would go unrecorded)
    _IDENTITY = (
        *("-c", "user.name=l2mac", "-c", "user.email=l2mac@localhost", "-c", "commit.gpgsign=false"),
        *("-c", "core.hooksPath=/dev/null"),
    )
    #: the same as pathspecs, for ``git add``: a repository's own .gitignore need not list them
    _PATHSPEC = tuple(f":(exclude,glob)**/{p}**" if p.endswith("/") else f":(exclude){p}" for p in _NOT_COMMITTED)

    def __init__(self, root: Path) -> None:
        self.root = root
        self.failed: list[str] = []  # why commits failed, in order
        self.enabled = self._init()

    def _git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *self._IDENTITY, *args], cwd=self.root, capture_output=True, text=True, check=False, timeout=60
        )

    def _init(self) -> bool:
        try:
            fresh = not (self.root / ".git").exists()
            if fresh and self._git("init", "-q", "-b", "main").returncode and self._git("init", "-q").returncode:
                return False
            if not (self.root / ".git").is_dir():  # a worktree: its repository's settings are the user's
                return True
            exclude = self.root / ".git" / "info" / "exclude"
            exclude.parent.mkdir(parents=True, exist_ok=True)
            current = exclude.read_text(encoding="utf-8").splitlines() if exclude.exists() else []
            missing = [w for w in _NOT_COMMITTED if w not in current]
            if missing:
                exclude.write_text("\n".join([*current, *missing]) + "\n", encoding="utf-8")
            return True
        except (OSError, subprocess.SubprocessError):
            return False

    def commit(self, message: str) -> str | None:
        """Commit everything (even an empty change, so every step has its commit). Returns the hash."""
        if not self.enabled:
            return None
        self._git("add", "-A", "--", ".", *self._PATHSPEC)
        done = self._git("commit", "-q", "--no-verify", "--allow-empty", "-m", message)
        if done.returncode != 0:
            self.failed.append(f"{message.splitlines()[0][:80]}: {(done.stderr or done.stdout).strip()[:300]}")
            return None
        head = self._git("rev-parse", "HEAD")
        return head.stdout.strip() or None

    def log(self) -> list[str]:
        if not self.enabled:
            return []
        out = self._git("log", "--format=%s")
        return out.stdout.splitlines() if out.returncode == 0 else []


@contextmanager
def scratch_copy(
    files: Mapping[str, str], prefix: str = "l2mac-scratch-", *, opaque_from: FileStore | None = None
) -> Iterator[FileStore]:
    """A throwaway store holding ``files`` (path -> text), removed on exit: where code is tried out (sampled
    implementations, the project as a step found it, a pruned test) without touching the project. With
    ``opaque_from`` (the project), its binary and hidden files come too, as they are: a test that reads a data
    file or the project's .env runs in the copy as it does in the project."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        scratch = FileStore(Path(tmp))
        for path, text in files.items():
            target = scratch.resolve(path)  # no size limit: these are the project's files, not the model's
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        if opaque_from is not None:
            for path in [p for p in opaque_from.opaque_files() if p not in files]:
                target = scratch.resolve(path)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(opaque_from.root / path, target)
        yield scratch


@contextmanager
def project_copy(store: FileStore, prefix: str = "l2mac-copy-") -> Iterator[FileStore]:
    """A throwaway copy of the project as it is, byte for byte (its files' encodings and modes, symlinks, empty
    folders; not .git, .l2mac, caches or the .venv), removed on exit: where code runs whose writes the project
    must not keep, in the same tree the project's own run would see."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        target = Path(tmp) / "project"
        skipped = shutil.ignore_patterns(*sorted(RESERVED_DIRS | IGNORED_DIRS))
        shutil.copytree(store.root, target, symlinks=True, ignore=skipped)
        yield FileStore(target)
