"""The project-level harness, offline: a scripted model writes a project in one answer, it is measured, and a
scripted judge's counts become Features % (LLM-judged)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from l2mac.benchmarks import projects as pj
from l2mac.checks.runner import SubprocessRunner
from l2mac.errors import ConfigError
from l2mac.models.client import ModelClient
from l2mac.models.scripted import ScriptedModel, last_user_text, text

APP = "def shorten(url):\n    return 'abc'\n"
TESTS = "from app import shorten\n\n\ndef test_shorten():\n    assert shorten('x') == 'abc'\n"
TESTS += "\n\ndef test_bad():\n    assert 1 == 2\n"
BROKEN = "def oops(:\n"


def test_tasks_load_with_their_feature_counts() -> None:
    assert pj.load_project_task("url_shortener").features == 17
    assert pj.load_project_task("twitter").features == 21
    assert pj.load_project_task("whatsapp").features == 20  # the authors' divisor
    with pytest.raises(ConfigError, match="unknown project task 'dropbox'"):
        pj.load_project_task("dropbox")


def test_single_writes_the_project_and_it_is_measured_and_judged(tmp_path: Path) -> None:
    task = pj.load_project_task("url_shortener")
    answer = (
        f"app.py\n```python\n{APP}```\n\ntests/test_app.py\n```python\n{TESTS}```\n\nbroken.py\n```python\n{BROKEN}```"
    )
    writer = ScriptedModel([text(answer)])
    judge = ScriptedModel([text("1.1 yes\nFEATURES_FUNCTIONAL=3"), text("FEATURES_FUNCTIONAL=4"), text("no count")])

    def generate(t: pj.ProjectTask) -> Path:
        return asyncio.run(pj.generate_single_project(ModelClient(writer.model), t, tmp_path / "proj"))

    result = pj.run_project_benchmark(
        task,
        generate=generate,
        measure_root=lambda root: pj.measure(root, runner=SubprocessRunner(), pylint_python=None),
        judge=pj.judge_with(lambda: ModelClient(judge.model), task, repeats=3),
    )
    assert result["files"] == 3 and result["loc"] >= 8
    assert result["ruff_errors"] >= 1  # broken.py does not parse
    assert result["tests"]["passed"] == 1 and result["tests"]["failed"] == 1
    f = result["features"]
    assert f["counts"] == [3, 4, None] and f["features_pct"] == round(100 * 3.5 / 17, 1)
    assert f["label"] == "Features % (LLM-judged)"
    assert judge.temperatures == [0.0, 0.0, 0.0]
    shown = last_user_text(judge.requests[0])
    assert "app.py" in shown and APP.strip() in shown and "5.3. Administrators can monitor" in shown
    assert task.prompt.strip()[:40] in last_user_text(writer.requests[0])


def test_an_empty_codebase_scores_0_without_asking_the_judge_and_unnamed_blocks_are_kept(tmp_path: Path) -> None:
    task = pj.load_project_task("url_shortener")
    judge = ScriptedModel([])  # asking it would fail the test
    scored = asyncio.run(pj.judge_features(ModelClient(judge.model), task, {}))
    assert scored["features_pct"] == 0.0 and judge.requests == []
    writer = ScriptedModel([text("Here is the app:\n```python\n" + APP + "```\n")])
    root = asyncio.run(pj.generate_single_project(ModelClient(writer.model), task, tmp_path / "p"))
    assert (root / "module_1.py").read_text() == APP
    assert (tmp_path / "p.single_answer.md").read_text().startswith("Here is the app:")


def test_the_engines_own_report_is_kept_with_the_measures(tmp_path: Path) -> None:
    import json

    from l2mac.benchmarks.projects import engine_outcome

    assert engine_outcome(tmp_path) is None  # the single strategy leaves no engine report
    (tmp_path / ".l2mac").mkdir()
    report = {"status": "stopped", "stopped_reason": "wall time", "steps": {"planned": 5, "run": 2, "detail": []}}
    (tmp_path / ".l2mac" / "run_report.json").write_text(json.dumps(report))
    out = engine_outcome(tmp_path)
    assert out is not None and out["status"] == "stopped" and out["stopped_reason"] == "wall time"
    assert out["steps"] == {"planned": 5, "run": 2}
