"""Crash-safe state: a run killed anywhere resumes to the same project, without repeating a journaled call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse
from scenario import full_run_replies

from l2mac.errors import RunError
from l2mac.journal import JOURNAL_FILE, load_journal
from l2mac.models.scripted import ScriptedModel
from l2mac.run import resume_l2mac, run_l2mac

from conftest import make_settings

CHILD = Path(__file__).parent / "crash_child.py"


def project_files(root: Path) -> dict[str, bytes]:
    """The project as bytes, without l2mac's records, git and caches."""
    out: dict[str, bytes] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not {".l2mac", ".git", "__pycache__", ".pytest_cache"} & set(rel.parts):
            out[rel.as_posix()] = p.read_bytes()
    return out


def child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHILD), *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_kill_9_at_any_point_then_resume_gives_the_same_project(tmp_path: Path) -> None:
    first = child("run", str(tmp_path / "reference"), "0")
    assert first.returncode == 0, first.stderr
    total = json.loads(first.stdout)["points"]
    reference = project_files(tmp_path / "reference" / "proj")
    assert {"todo/store.py", "todo/cli.py", "tests/test_store.py"} <= set(reference)
    points = list(range(3, total + 1, 2))  # points 1-2 come before the run file exists: see below
    assert len(points) >= 20

    early = tmp_path / "kill-1"
    assert child("run", str(early), "1").returncode == -9
    nothing = child("resume", str(early / "proj"))
    assert "holds no l2mac run to resume" in nothing.stderr  # and nothing was paid for: no journal either
    assert not (early / "proj" / ".l2mac" / JOURNAL_FILE).exists()

    def crash_and_resume(at: int) -> dict[str, Any]:
        ws = tmp_path / f"kill-{at}"
        crashed = child("run", str(ws), str(at))
        assert crashed.returncode == -9, (at, crashed.stdout, crashed.stderr[-2000:])
        resumed = child("resume", str(ws / "proj"))
        assert resumed.returncode == 0, (at, resumed.stderr[-3000:])
        return {"at": at, "ws": ws, **json.loads(resumed.stdout)}

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(crash_and_resume, points))
    for r in results:
        where = f"killed at point {r['at']}"
        assert r["status"] == "passed", where
        # the resumed run asked the model only for what the journal did not hold: no paid call repeated
        assert r["remaining"] == 0 and r["live_calls"] == 8 - r["journaled"], (where, r)
        assert r["replayed"]["replayed_calls"] == r["journaled"] and r["replayed"]["diverged_at_call"] is None
        assert project_files(r["ws"] / "proj") == reference, where
        calls = load_journal(r["ws"] / "proj" / ".l2mac" / JOURNAL_FILE)
        assert [c.seq for c in calls] == list(range(1, 9)), where
    assert len({r["journaled"] for r in results}) >= 5  # the kills fell all over the run, not in one place


def interrupt_at(n: int) -> list[Any]:
    """The scenario, with Ctrl-C arriving while the model computes its n-th answer (1-based)."""

    def ctrl_c(messages: list[ModelMessage]) -> ModelResponse:
        raise KeyboardInterrupt

    replies: list[Any] = full_run_replies()
    return [*replies[: n - 1], ctrl_c]


def test_ctrl_c_then_resume_replays_journaled_answers_and_finishes(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_l2mac("Build a todo app", settings, model=ScriptedModel(interrupt_at(5)).model)
    project = tmp_path / "ws" / "proj"
    log = [json.loads(line) for line in (project / ".l2mac" / "log.jsonl").read_text().splitlines()]
    assert log[-1]["kind"] == "run_interrupted" and "l2mac resume" in log[-1]["hint"]
    rest = ScriptedModel(full_run_replies()[4:])
    result = resume_l2mac(project, model=rest.model)
    assert result.ok, result.report
    assert rest.remaining == 0 and len(rest.requests) == 4
    assert result.report.journal.model_dump() == {
        "resumed": True,
        "replayed_calls": 4,
        "reused_calls": 0,
        "diverged_at_call": None,
    }
    assert result.report.requests == 8  # the replayed calls count: they were paid for
    # what the interrupted run left is set aside, not deleted
    assert (project / ".l2mac" / "before-resume-1" / "todo" / "store.py").exists()


def test_a_request_that_differs_from_the_journal_goes_live_from_there(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_l2mac("Build a todo app", settings, model=ScriptedModel(interrupt_at(3)).model)
    project = tmp_path / "ws" / "proj"
    # the recorded task was edited: the very first request (planning) no longer matches the journal
    run_file = project / ".l2mac" / "run.json"
    data = json.loads(run_file.read_text())
    data["task"] = "Build a todo app, with a twist"
    run_file.write_text(json.dumps(data))
    live = ScriptedModel(full_run_replies())
    result = resume_l2mac(project, model=live.model)
    assert result.report.journal.diverged_at_call == 1 and result.report.journal.replayed_calls == 0
    assert result.ok and live.remaining == 0


def test_a_damaged_journal_is_a_clear_error_and_nothing_moves(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_l2mac("Build a todo app", settings, model=ScriptedModel(interrupt_at(4)).model)
    project = tmp_path / "ws" / "proj"
    journal = project / ".l2mac" / JOURNAL_FILE
    lines = journal.read_text().splitlines()
    lines[1] = lines[1][:40] + "#garbage#" + lines[1][60:]
    journal.write_text("\n".join(lines) + "\n")
    before = project_files(project)
    with pytest.raises(RunError, match=r"line 2 is damaged .* truncate it before line 2"):
        resume_l2mac(project, model=ScriptedModel([]).model)
    assert project_files(project) == before


def test_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_l2mac("Build a todo app", settings, model=ScriptedModel(interrupt_at(4)).model)
    journal = tmp_path / "ws" / "proj" / ".l2mac" / JOURNAL_FILE
    whole = journal.read_text()
    journal.write_text(whole + whole.splitlines()[0][:50])  # a kill mid-append
    assert len(load_journal(journal)) == 3


def test_resume_of_a_folder_without_a_run_says_so(tmp_path: Path) -> None:
    from l2mac.errors import ConfigError

    with pytest.raises(ConfigError, match="holds no l2mac run to resume"):
        resume_l2mac(tmp_path)


def test_run_file_never_holds_the_api_key(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, llm={"api_key": "sk-THE-SECRET"})
    with pytest.raises(KeyboardInterrupt):
        run_l2mac("Build a todo app", settings, model=ScriptedModel(interrupt_at(2)).model)
    run_file = (tmp_path / "ws" / "proj" / ".l2mac" / "run.json").read_text()
    assert "sk-THE-SECRET" not in run_file and json.loads(run_file)["task"] == "Build a todo app"
    assert os.stat(tmp_path / "ws" / "proj" / ".l2mac" / "run.json")  # written, and readable back
