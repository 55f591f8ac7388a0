"""The file store: path jail (including a property-based test), atomic writes, edits, git history."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from l2mac.errors import PathOutsideWorkspace, WorkspaceError
from l2mac.store import FileStore, GitHistory, project_copy


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "root")


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "../x.py",
        "a/../../x.py",
        "a/../..",
        "~/x",
        "C:\\x.py",
        "\\\\server\\share\\x",
        "",
        "  ",
        ".",
        "a/./..//../b",
        ".git/config",
        ".l2mac/log.jsonl",
        "x\x00.py",
    ],
)
def test_paths_that_escape_or_touch_reserved_folders_are_refused(store: FileStore, path: str) -> None:
    with pytest.raises(PathOutsideWorkspace):
        store.write_text(path, "x")


def test_symlink_escape_is_refused(store: FileStore, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, store.root / "link")
    with pytest.raises(PathOutsideWorkspace, match="symlink"):
        store.write_text("link/evil.py", "x")
    assert not (outside / "evil.py").exists()


# Path segments a model might produce: normal names, dots, separators, traversal, odd characters.
segment = st.one_of(
    st.sampled_from(["..", ".", "", "~", "/", "\\", "..\\..", ".git", "C:", "a", "src", "%2e%2e", "..."]),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=8),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(segment, min_size=1, max_size=6), sep=st.sampled_from(["/", "\\"]))
def test_no_path_a_model_names_escapes_the_workspace(tmp_path: Path, parts: list[str], sep: str) -> None:
    store = FileStore(tmp_path / "jail")
    path = sep.join(parts)
    try:
        resolved = store.resolve(path)
    except PathOutsideWorkspace:
        return
    real = Path(os.path.realpath(resolved))
    assert real == store.root or store.root in real.parents
    assert ".git" not in resolved.relative_to(store.root).parts[:1]


def test_write_is_atomic_and_leaves_no_temp_files(store: FileStore) -> None:
    assert store.write_text("pkg/mod.py", "A = 1\n") is True
    assert store.write_text("pkg/mod.py", "A = 2\n") is False
    assert store.read_text("pkg/mod.py") == "A = 2\n"
    assert sorted(p.name for p in (store.root / "pkg").iterdir()) == ["mod.py"]
    assert store.revision == 2 and store.changed_since(0) == ["pkg/mod.py"]


def test_read_lines_ranges(store: FileStore) -> None:
    store.write_text("f.txt", "\n".join(f"l{i}" for i in range(1, 11)))
    part = store.read_lines("f.txt", 3, 5)
    assert (part.text, part.start_line, part.end_line, part.total_lines) == ("l3\nl4\nl5", 3, 5, 10)
    assert store.read_lines("f.txt", 9, 99).text == "l9\nl10"


def test_replace_once_requires_exactly_one_match(store: FileStore) -> None:
    store.write_text("a.py", "x = 1\nx = 1\ny = 2\n")
    with pytest.raises(WorkspaceError, match="occurs 2 times"):
        store.replace_once("a.py", "x = 1", "x = 3")
    with pytest.raises(WorkspaceError, match="not found"):
        store.replace_once("a.py", "z = 1", "z = 3")
    store.replace_once("a.py", "y = 2", "y = 3")
    assert store.read_text("a.py").endswith("y = 3\n")


def test_delete_removes_empty_folders_and_listing_skips_caches(store: FileStore) -> None:
    store.write_text("a/b/c.py", "x")
    store.write_text("keep.py", "x")
    (store.root / "__pycache__").mkdir()
    (store.root / "__pycache__" / "k.pyc").write_bytes(b"\x00")
    store.delete("a/b/c.py")
    assert not (store.root / "a").exists()
    assert store.list_files() == ["keep.py"]
    with pytest.raises(FileNotFoundError):
        store.delete("a/b/c.py")


def test_binary_files_are_not_shown_as_text(store: FileStore) -> None:
    (store.root / "img.png").write_bytes(b"\x89PNG\x00\x00data")
    with pytest.raises(WorkspaceError, match="binary"):
        store.read_text("img.png")
    assert "img.png" not in store.snapshot()


def test_git_history_commits_each_step_and_ignores_records(store: FileStore) -> None:
    history = GitHistory(store.root)
    assert history.enabled
    store.write_text("a.py", "A = 1\n")
    (store.root / ".l2mac").mkdir()
    (store.root / ".l2mac" / "log.jsonl").write_text("{}\n")
    first = history.commit("step 1/2: a")
    second = history.commit("step 2/2: nothing changed")
    assert first and second and first != second
    assert history.log() == ["step 2/2: nothing changed", "step 1/2: a"]
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=store.root, capture_output=True, text=True).stdout.split()
    assert tracked == ["a.py"]


def test_a_project_copy_is_the_project_byte_for_byte_but_its_git_and_venv(tmp_path: Path) -> None:
    """Where the task's examples run (a review of de8d781): a text copy turned a latin-1 data file's é into the
    replacement character, and left out empty folders and symlinks, so code read other data than the project's."""
    root = tmp_path / "p"
    store = FileStore(root)
    store.write_text("app.py", "X = 1\n")
    (root / "data.csv").write_bytes("café\n".encode("latin-1"))
    (root / "out").mkdir()
    (root / "link.py").symlink_to("app.py")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").write_text("")
    with project_copy(store) as copy:
        assert (copy.root / "data.csv").read_bytes() == "café\n".encode("latin-1")
        assert (copy.root / "out").is_dir() and (copy.root / "link.py").is_symlink()
        assert not (copy.root / ".venv").exists() and copy.read_text("app.py") == "X = 1\n"
        copy.write_text("new.txt", "written in the copy")
    assert not (root / "new.txt").exists()
