"""Reusing an earlier run's answers: the same requests get the same answers, the rest are asked of the model, so
what a changed setting or version does shows on the very same run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelResponse, TextPart
from scenario import full_run_replies
from test_resume import project_files

from l2mac.benchmarks.runner import task_settings, usage_summary
from l2mac.errors import ConfigError
from l2mac.journal import JOURNAL_FILE, Journal, JournaledCall, load_journal
from l2mac.models.scripted import ScriptedModel
from l2mac.run import run_l2mac

from conftest import make_settings


def earlier_run(tmp_path: Path) -> Path:
    """The scenario run once (8 calls): its project folder."""
    settings = make_settings(tmp_path, workspace=tmp_path / "before")
    assert run_l2mac("Build a todo app", settings, model=ScriptedModel(full_run_replies()).model).ok
    return tmp_path / "before" / "proj"


def test_a_run_given_an_earlier_runs_answers_makes_no_call_while_it_goes_the_same_way(tmp_path: Path) -> None:
    before = earlier_run(tmp_path)
    silent = ScriptedModel([])  # any call to it fails the run
    settings = make_settings(tmp_path, workspace=tmp_path / "after", answers_from=before)
    result = run_l2mac("Build a todo app", settings, model=silent.model)
    assert result.ok, result.report
    assert silent.requests == []
    assert result.report.journal.model_dump() == {
        "resumed": False,
        "replayed_calls": 0,
        "reused_calls": 8,
        "diverged_at_call": None,
    }
    assert result.report.requests == 8  # counted: they were paid for, by the earlier run
    after = tmp_path / "after" / "proj"
    assert project_files(after) == project_files(before)
    # the new run's journal is its own, complete: it resumes without the earlier run
    assert [c.seq for c in load_journal(after / ".l2mac" / JOURNAL_FILE)] == list(range(1, 9))


def test_where_the_run_goes_differently_the_model_is_asked_and_reuse_goes_on_where_it_rejoins(tmp_path: Path) -> None:
    before = earlier_run(tmp_path)
    journal = before / ".l2mac" / JOURNAL_FILE
    lines = journal.read_text().splitlines()
    entry = json.loads(lines[3])
    entry["key"] = "0" * 32  # the earlier run's 4th request was another one
    lines[3] = json.dumps(entry)
    journal.write_text("\n".join(lines) + "\n")
    live = ScriptedModel(full_run_replies()[3:4])  # the 4th answer, asked of the model this time
    settings = make_settings(tmp_path, workspace=tmp_path / "after", answers_from=before)
    result = run_l2mac("Build a todo app", settings, model=live.model)
    assert result.ok, result.report
    assert live.remaining == 0 and len(live.requests) == 1
    assert result.report.journal.reused_calls == 7 and result.report.journal.diverged_at_call == 4
    assert project_files(tmp_path / "after" / "proj") == project_files(before)


def test_answers_from_a_folder_without_a_run_is_a_clear_error_and_makes_no_project(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, answers_from=tmp_path / "nothing")
    with pytest.raises(ConfigError, match=r"no answers to reuse at .*nothing: give an earlier run's project folder"):
        run_l2mac("Build a todo app", settings, model=ScriptedModel([]).model)
    assert not (tmp_path / "ws").exists()


def test_a_benchmark_task_reuses_the_answers_of_its_own_project_in_the_earlier_workspace(tmp_path: Path) -> None:
    earlier = tmp_path / "earlier"
    (earlier / "ClassEval_1" / ".l2mac").mkdir(parents=True)
    (earlier / "ClassEval_1" / ".l2mac" / JOURNAL_FILE).write_text("")
    settings = make_settings(tmp_path, answers_from=earlier)
    one = task_settings(settings, tmp_path / "now", "ClassEval_1").run
    assert (one.answers_from, one.workspace, one.project_name) == (
        earlier / "ClassEval_1",
        tmp_path / "now",
        "ClassEval_1",
    )
    assert task_settings(settings, tmp_path / "now", "ClassEval_2").run.answers_from is None  # not reached before
    assert task_settings(make_settings(tmp_path), tmp_path / "now", "ClassEval_1").run.answers_from is None


def test_identical_requests_made_at_once_get_the_answers_they_got_before_in_the_order_they_were_made(
    tmp_path: Path,
) -> None:
    # samples are asked at once: numbered as they are made, journaled as they finish (here the second first)
    first, second = (ModelResponse(parts=[TextPart(t)]) for t in ("first", "second"))
    calls = [JournaledCall(5, "k", "sample", second, None), JournaledCall(4, "k", "sample", first, None)]
    for journal in (Journal(tmp_path / "a.jsonl", replay=calls), Journal(tmp_path / "b.jsonl", reuse=calls)):
        served = [journal.lookup(journal.next_seq(), "k") for _ in range(2)]
        assert [c.response for c in served if c is not None] == [first, second]


def test_a_results_summary_counts_the_answers_reused_only_when_some_were() -> None:
    entry = {"tokens": 10, "requests": 2, "cost_usd": None, "wall_time_s": 1.0}
    assert "reused_calls" not in usage_summary({"a": entry})
    assert usage_summary({"a": {**entry, "reused_calls": 2}, "b": {**entry, "reused_calls": 0}})["reused_calls"] == 2


def test_answers_from_another_model_or_a_damaged_journal_are_clear_errors(tmp_path: Path) -> None:
    before = earlier_run(tmp_path)
    other = make_settings(tmp_path, workspace=tmp_path / "after", answers_from=before, llm={"temperature": 0.9})
    with pytest.raises(ConfigError, match=r"came from other model settings \(temperature None then, 0.9 now\)"):
        run_l2mac("Build a todo app", other, model=ScriptedModel([]).model)
    journal = before / ".l2mac" / JOURNAL_FILE
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join([lines[0], "{not json", *lines[2:]]) + "\n")
    settings = make_settings(tmp_path, workspace=tmp_path / "after", answers_from=before)
    with pytest.raises(ConfigError, match=r"cannot reuse these answers: .*line 2 is damaged") as e:
        run_l2mac("Build a todo app", settings, model=ScriptedModel([]).model)
    assert "resume" not in str(e.value)
    assert not (tmp_path / "after").exists()


def test_a_benchmarks_answers_from_must_be_a_folder_here(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, answers_from=tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match="is not a folder here"):
        task_settings(settings, tmp_path / "now", "ClassEval_1")


def test_an_earlier_run_file_that_names_no_model_settings_does_not_stop_the_reuse(tmp_path: Path) -> None:
    before = earlier_run(tmp_path)
    (before / ".l2mac" / "run.json").write_text("{}")  # as written by hand, or by an older l2mac
    settings = make_settings(tmp_path, workspace=tmp_path / "after", answers_from=before)
    result = run_l2mac("Build a todo app", settings, model=ScriptedModel([]).model)
    assert result.ok and result.report.journal.reused_calls == 8
