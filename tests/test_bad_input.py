"""Bad input gets a clear one-line error and loses nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from l2mac.errors import ConfigError, WorkspaceError
from l2mac.models.scripted import ScriptedModel, call
from l2mac.run import run_l2mac

from conftest import make_settings

ONE_STEP = [
    call("submit_plan", {"steps": [{"title": "A", "instruction": "Write a.py with A = 1.", "requires_tests": False}]}),
    call("write_files", {"files": [{"path": "a.py", "content": "A = 1\n"}]}),
    call("step_complete", {"summary": "a.py: A"}),
]


def test_a_prompt_larger_than_the_context_window_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)  # a 16,000-token window
    script = ScriptedModel(list(ONE_STEP))
    with pytest.raises(
        ConfigError, match=r"the prompt is about [\d,]+ tokens, more than a quarter of .*--prompt-program"
    ):
        run_l2mac("Build this: " + "requirement " * 6000, settings, model=script.model)
    assert script.requests == [] and not (tmp_path / "ws").exists()


def test_a_workspace_that_cannot_be_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "ws"
    blocker.write_text("a file where the workspace should be")
    with pytest.raises(WorkspaceError, match="cannot write to the project folder"):
        run_l2mac("Build a", make_settings(tmp_path), model=ScriptedModel(list(ONE_STEP)).model)
    assert blocker.read_text() == "a file where the workspace should be"


def test_force_writes_into_a_folder_with_binary_and_non_utf8_files_and_keeps_them(tmp_path: Path) -> None:
    project = tmp_path / "ws" / "proj"
    project.mkdir(parents=True)
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    (project / "logo.png").write_bytes(png)
    (project / "notes.txt").write_bytes("café résumé".encode("latin-1"))
    result = run_l2mac("Build a", make_settings(tmp_path, force=True), model=ScriptedModel(list(ONE_STEP)).model)
    assert result.ok and result.workspace == project.resolve()
    assert (project / "logo.png").read_bytes() == png
    assert (project / "notes.txt").read_bytes() == "café résumé".encode("latin-1")
    assert result.files["a.py"] == "A = 1\n" and "logo.png" not in result.files  # binary: not shown as text
    # the files that were there are the history's first commit, so the run can always be diffed against them
    from l2mac.store import GitHistory

    assert GitHistory(project).log()[-1] == "files present before the run"


def test_without_force_a_non_empty_folder_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "ws" / "proj"
    project.mkdir(parents=True)
    (project / "mine.txt").write_text("mine")
    result = run_l2mac("Build a", make_settings(tmp_path), model=ScriptedModel(list(ONE_STEP)).model)
    assert result.workspace.name == "proj-2" and (project / "mine.txt").read_text() == "mine"
    assert sorted(p.name for p in project.iterdir()) == ["mine.txt"]
