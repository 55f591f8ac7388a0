"""The run's page, built from recorded runs made here with scripted models: a passing run, a failed one, one stopped
and resumed, one that crashed before its report, an SoA run and a book. What the page says is checked against
the run's own log, not just that a file exists."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from scenario import full_run_replies
from test_soa import MEAN_SPLIT, MEAN_TESTS, MUL, SKELETON, TOTAL, Team, run_team
from typer.testing import CliRunner

from l2mac.cli import app
from l2mac.models.scripted import ScriptedModel, call, text
from l2mac.run import resume_l2mac, run_l2mac
from l2mac.store import FileStore
from l2mac.visual import read_run, write_comparison, write_run_report
from l2mac.visual.run_view import Header, RunView, _touch

from conftest import make_settings, run_scripted


def _log(project: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project / ".l2mac" / "log.jsonl").read_text().splitlines()]


def _page(project: Path) -> str:
    return (project / ".l2mac" / "report.html").read_text(encoding="utf-8")


def _step_rows(page: str) -> list[tuple[str, str]]:
    return re.findall(r'<tr class="step" data-step="(\d+)" data-status="([\w ]+)">', page)


def _section(page: str, element_id: str) -> str:
    start = page.index(f'id="{element_id}"')
    return page[start : page.index("</div>", start)]


def test_a_finished_run_writes_its_page_with_steps_heatmap_timeline_and_tests(tmp_path: Path) -> None:
    result, _ = run_scripted(tmp_path, full_run_replies(), report_page=True)
    page = _page(result.workspace)

    assert _step_rows(page) == [("1", "passed"), ("2", "passed")]
    assert 'id="run-status">passed<' in page and "custom:scripted" in page and "Build a todo app" in page
    # the heatmap's cells are the log's: every file a step's tool calls created, in that step's column
    view = read_run(result.workspace)
    logged = {(p, f"step {e['step']}") for e in _log(result.workspace) if e["kind"] == "tool_call" for p in e["files"]}
    assert set(view.access) == logged
    assert set(view.access.values()) == {"created"}  # each file new in the step that wrote it, edits included
    assert view.access[("todo/store.py", "step 1")] == "created"
    assert view.access[("todo/cli.py", "step 2")] == "created" and ("todo/cli.py", "step 1") not in view.access
    heatmap = _section(page, "heatmap")
    assert "<svg" in heatmap and all(f in heatmap for f in ("todo/store.py", "tests/test_cli.py"))
    # the timeline: the plan, then each step as a bar holding its model calls and its check runs
    bars = [s.lane for s in view.spans if s.kind in ("step", "agent")]
    assert bars == ["plan", "step 1", "step 2"]
    step1 = next(s for s in view.spans if s.lane == "step 1" and s.kind == "step")
    inside = [s for s in view.spans if s.lane == "step 1" and s.kind in ("model", "checks")]
    assert [s.kind for s in inside].count("checks") == 2 and [s.kind for s in inside].count("model") == 5
    assert all(step1.start <= s.start and s.end <= step1.end + 1e-6 for s in inside)
    assert "<svg" in _section(page, "timeline")
    # tests over time: step 1 met its failing test, then passed; step 2 ended with three passing
    counts = [(t.column, t.passed, t.failing) for t in view.tests]
    assert counts == [("step 1", 1, 1), ("step 1", 2, 0), ("step 2", 3, 0)]
    # the final files, each viewable, and each step's diff from the project's history
    assert "return len(items)" in page and page.count('class="file"') == 5
    assert [c.subject for c in view.commits] == ["step 1/2: Todo store [passed]", "step 2/2: Command line [passed]"]
    assert "+class TodoStore:" in view.commits[0].diff


def test_a_failed_step_and_its_reason_are_on_the_page(tmp_path: Path) -> None:
    never = "def test_never():\n    assert 1 == 2\n"
    replies = [
        call("submit_plan", {"steps": [{"title": "Broken", "instruction": "x"}]}),
        call("write_files", {"files": [{"path": "tests/test_x.py", "content": never}]}),
        call("step_complete", {"summary": "done"}),
        call("step_complete", {"summary": "done, really"}),
        text("The step could not be finished: test_never fails."),
    ]
    result, _ = run_scripted(tmp_path, replies, max_check_failures=1, report_page=True)
    page = _page(result.workspace)
    assert _step_rows(page) == [("1", "failed")]
    assert 'id="run-status">failed<' in page and "checks still failing after 2 attempts" in page
    assert [(t.passed, t.failing) for t in read_run(result.workspace).tests] == [(0, 1), (0, 1)]


def test_a_stopped_run_has_a_page_and_its_resumption_redraws_it(tmp_path: Path) -> None:
    script = ScriptedModel(full_run_replies())
    settings = make_settings(tmp_path, max_tokens=8_000, report_page=True)
    stopped = run_l2mac("Build a todo app", settings, model=script.model)
    assert stopped.report.status == "stopped"
    assert 'id="run-status">stopped<' in _page(stopped.workspace)
    assert _step_rows(_page(stopped.workspace)) == [("1", "stopped"), ("2", "not run")]  # the budget ended step 1

    rest = ScriptedModel(full_run_replies()[len(script.requests) :])
    again = resume_l2mac(stopped.workspace, model=rest.model, overrides={"max_tokens": 1_000_000})
    assert again.ok
    page = _page(again.workspace)
    assert _step_rows(page) == [("1", "passed"), ("2", "passed")] and 'id="run-status">passed<' in page


def test_a_run_that_crashed_before_its_report_still_gets_a_page_from_its_log(tmp_path: Path) -> None:
    result, _ = run_scripted(tmp_path, full_run_replies())
    (result.workspace / ".l2mac" / "run_report.json").unlink()  # as if killed before the end
    with (result.workspace / ".l2mac" / "log.jsonl").open("a") as f:
        f.write('{"ts": 1, "kind": "model_ca')  # and cut off mid-line
    view = read_run(result.workspace)
    assert view.header.status.startswith("unfinished")
    assert view.header.tokens_in == sum(e["input_tokens"] for e in _log_lines_ok(result.workspace))
    page = _page_of(result.workspace)
    assert _step_rows(page) == [("1", "passed"), ("2", "passed")] and "unfinished" in page


def _log_lines_ok(project: Path) -> list[dict[str, Any]]:
    out = []
    for line in (project / ".l2mac" / "log.jsonl").read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            break
        if entry["kind"] == "model_call":
            out.append(entry)
    return out


def _page_of(project: Path) -> str:
    return write_run_report(project).read_text(encoding="utf-8")


def test_an_soa_run_shows_its_agents_as_columns_and_bars(tmp_path: Path) -> None:
    team = Team(
        {
            "lead": [("write_skeleton", SKELETON)],
            "mul": [("write_function", {"code": MUL})],
            "mean": [("write_function", {"code": MEAN_SPLIT, "tests": MEAN_TESTS})],
            "_total": [("write_function", {"code": TOTAL})],
        }
    )
    result = run_team(tmp_path, team, report_page=True)
    assert result.ok
    view = read_run(result.workspace)
    assert view.columns == ["agent 0", "agent 1", "agent 2", "agent 3"]
    assert view.access[("calc/ops.py", "agent 0")] == "created"  # the lead's skeleton
    assert view.access[("calc/ops.py", "agent 1")] == "written"  # mul's body, put in by its agent
    assert view.access[("tests/test_stats_mean.py", "agent 2")] == "created"  # mean's agent, a mother now
    assert ("calc/ops.py", "agent 3") not in view.access  # _total's agent only touched its own module
    assert {s.lane for s in view.spans if s.kind == "agent"} == {"agent 0", "agent 1", "agent 2", "agent 3"}
    assert {t.column for t in view.tests} == {"agent 0", "agent 2"}  # the two mothers ran their tests
    assert "<svg" in _section(_page(result.workspace), "heatmap")


def test_a_book_run_has_a_page_without_tests(tmp_path: Path) -> None:
    replies = [
        call("submit_plan", {"steps": [{"title": "Outline", "instruction": "Write outline.md"}]}),
        call("write_files", {"files": [{"path": "outline.md", "content": "# Twirls\n1. Dough"}]}),
        call("step_complete", {"summary": "outline"}),
    ]
    result, _ = run_scripted(tmp_path, replies, task="Write a pasta book", domain="book", report_page=True)
    page = _page(result.workspace)
    assert _step_rows(page) == [("1", "passed")] and "(book)" in page
    assert "no tests ran" in page and "outline.md" in _section(page, "heatmap")


def test_the_command_writes_a_runs_page_and_a_comparison_of_runs_and_results(tmp_path: Path) -> None:
    a, _ = run_scripted(tmp_path / "a", full_run_replies())
    cli = CliRunner()
    done = cli.invoke(app, ["report", str(a.workspace)])
    assert done.exit_code == 0 and done.stdout.strip() == str(a.workspace / ".l2mac" / "report.html")
    assert _step_rows(_page(a.workspace)) == [("1", "passed"), ("2", "passed")]

    results = tmp_path / "single.json"
    summary = {"classes_passed": 9, "scored": 50, "note": "words"}
    results.write_text(json.dumps({"benchmark": "ClassEval", "strategy": "single", "model": "m", "summary": summary}))
    out = tmp_path / "compare.html"
    done = cli.invoke(app, ["report", str(a.workspace), str(results), "--out", str(out)])
    assert done.exit_code == 0, done.stdout
    page = out.read_text()
    assert page.count('<tr class="run">') == 1 and "2/2" in page and "3/3" in page
    assert '<tr class="bench-row"><td>single</td><td>m</td><td class="num">9</td>' in page

    missing = cli.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "no such file or folder" in missing.stderr
    not_a_run = cli.invoke(app, ["report", str(tmp_path)])
    assert not_a_run.exit_code == 2 and "no run record" in not_a_run.stderr


def test_a_page_that_cannot_be_drawn_never_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: Path) -> Path:
        raise RuntimeError("no fonts")

    monkeypatch.setattr("l2mac.run.write_run_report", broken)
    result, _ = run_scripted(tmp_path, full_run_replies(), report_page=True)
    assert result.ok and not (result.workspace / ".l2mac" / "report.html").exists()
    assert any(e["kind"] == "report_page_failed" and "no fonts" in e["error"] for e in _log(result.workspace))


def test_comparison_leaves_out_json_that_is_not_benchmark_results_and_refuses_nothing_to_compare(
    tmp_path: Path,
) -> None:
    bad, good = tmp_path / "x.json", tmp_path / "r.json"
    bad.write_text("[1, 2]")
    good.write_text(json.dumps({"benchmark": "B", "strategy": "l2mac", "model": "m", "summary": {"passed": 3}}))
    page, skipped = write_comparison([bad, good], tmp_path / "out.html")
    assert skipped == [bad] and '<td class="num">3</td>' in page.read_text()
    with pytest.raises(ValueError, match="nothing to compare"):
        write_comparison([bad], tmp_path / "out.html")


def test_a_cell_shows_a_read_only_where_nothing_else_happened_and_what_the_file_came_to(tmp_path: Path) -> None:
    view = RunView("p", read_run_header(), [])
    for path, how in [("a.py", "created"), ("a.py", "written"), ("a.py", "read"), ("b.py", "read"), ("b.py", "written"),
                      ("c.py", "created"), ("c.py", "deleted"), ("d.py", "deleted"), ("d.py", "created")]:  # fmt: skip
        _touch(view, "step 1", path, how)
    assert view.access == {
        ("a.py", "step 1"): "created",
        ("b.py", "step 1"): "written",
        ("c.py", "step 1"): "deleted",
        ("d.py", "step 1"): "written",
    }
    store = FileStore(tmp_path)
    start = store.revision
    store.write_text("n.py", "1")
    store.delete("n.py")
    store.write_text("n.py", "2")
    (tmp_path / "old.py").write_text("x")
    store.write_text("old.py", "y")
    assert store.accesses_since(start) == {"n.py": "created", "old.py": "written"}


def read_run_header() -> Header:
    return Header("t", "m", "l2mac", "passed", 1.0, 1, 1, "unknown", "subprocess", "codebase")


def test_odd_paths_private_files_and_an_earlier_forced_run_do_not_spoil_the_page(tmp_path: Path) -> None:
    result, _ = run_scripted(tmp_path, full_run_replies())
    project = result.workspace
    (project / ".env").write_text("API_KEY=secret")
    (project / "cost_$x$.py").write_text("x = 1\n")
    with (project / ".l2mac" / "log.jsonl").open("a") as f:  # a second run, forced into the same folder
        f.write(json.dumps({"ts": 4e9, "kind": "run_started", "task": "Second task", "model": "m2"}) + "\n")
        files = {"cost_$x$.py": "created"}
        f.write(json.dumps({"ts": 4e9 + 1, "kind": "tool_call", "step": 1, "tool": "write_files", "files": files}))
    view = read_run(project)
    assert view.header.task == "Second task" and view.columns == ["step 1"]
    assert view.access == {("cost_$x$.py", "step 1"): "created"}
    assert view.header.status.startswith("unfinished")  # the report on disk is the earlier run's
    page = _page_of(project)
    assert "API_KEY" not in page and "cost_$x$.py" in page


def test_the_timeline_splits_a_model_call_into_reading_the_prompt_and_generating(tmp_path: Path) -> None:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    from l2mac.models.client import CallRecord, ModelClient
    from l2mac.record import RunRecord
    from l2mac.visual.page import time_spent

    def local_like(messages, info):  # type: ignore[no-untyped-def]
        return ModelResponse(parts=[TextPart("ok")], provider_details={"prompt_s": 1.5})

    records: list[CallRecord] = []
    client = ModelClient(FunctionModel(local_like), on_call=records.append)
    asyncio.run(client.request([ModelRequest(parts=[UserPromptPart("hi")])], purpose="step 1"))
    assert records[0].prompt_s == 1.5  # what the embedded model reports, kept in the call's record

    project = tmp_path / "p"
    record = RunRecord(project)
    record.log("run_started", task="t")
    record.log("step_started", step=1, title="One")
    record.log_call(replace(records[0], latency_s=4.0))
    view = read_run(project)
    spans = [(s.kind, round(s.end - s.start, 2)) for s in view.spans if s.kind in ("prompt", "model")]
    assert spans == [("prompt", 1.5), ("model", 2.5)]
    spent = time_spent(view)
    assert (spent.model, spent.prompt) == (4.0, 1.5)


def test_an_soa_run_whose_lead_drafts_in_a_step_shows_every_agent_as_it_ended(tmp_path: Path) -> None:
    """The control unit's step in which the lead drafts a given module logs step events: they are not the run's
    steps (its agents are), so every agent is shown as it ended, none as "not run"."""
    from test_soa import BUMP, COUNTER_INIT, COUNTER_TASK

    tests = "from counter import Counter\n\n\ndef test_bump():\n    assert Counter().bump(3) == 3\n"
    init, bump = [("write_function", {"code": COUNTER_INIT})], [("write_function", {"code": BUMP})]
    team = Team({"lead": [("write_tests", {"tests": tests})], "__init__": init, "bump": bump})
    settings = make_settings(tmp_path, strategy="soa", report_page=True)
    result = run_l2mac(COUNTER_TASK, settings, model=team.model)
    assert any(e["kind"] == "step_started" for e in _log(result.workspace))  # the lead's draft: a step
    rows = _step_rows(_page(result.workspace))
    assert len(rows) == 3 and all(status == "passed" for _, status in rows), rows  # the lead, __init__, bump
