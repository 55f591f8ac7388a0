"""The real embedded model, end to end (marked ``local_model``; run with ``python3 bootstrap.py e2e``).

Needs ``l2mac[local]`` and the pulled model; skipped with the reason otherwise. It generates a small project
from a fixed one-step prompt program and checks that the generated project's own tests pass, judged by
running pytest on it here, not by trusting the run report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from l2mac.models.local.catalog import DEFAULT_LOCAL_MODEL, get_spec, models_dir
from l2mac.run import run_l2mac
from l2mac.settings import load_settings

pytestmark = pytest.mark.local_model

PLAN = """\
task: a small math utilities module with pytest tests
steps:
  - title: Math utilities
    instruction: >-
      Write mathutils.py with is_even(n: int) -> bool, factorial(n: int) -> int (factorial(0) == 1; a
      negative n raises ValueError) and gcd(a: int, b: int) -> int. Write tests/test_mathutils.py with
      pytest tests of each function, including factorial(0) and a negative n.
    requires_tests: true
"""


def _model_ready() -> str | None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return "llama-cpp-python is not installed (pip install 'l2mac[local]')"
    if not (models_dir() / get_spec(DEFAULT_LOCAL_MODEL).filename).exists():
        return "the embedded model is not downloaded (l2mac models pull)"
    return None


def test_embedded_model_builds_a_project_whose_tests_pass(tmp_path: Path) -> None:
    reason = _model_ready()
    if reason:
        pytest.skip(reason)
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN)
    settings = load_settings(
        config_path=tmp_path / "none.yaml",
        llm={"model": f"local:{DEFAULT_LOCAL_MODEL}"},
        run={"workspace": tmp_path / "ws", "project_name": "mathutils", "prompt_program": plan, "max_turns": 8},
    )
    result = run_l2mac("a small math utilities module with pytest tests", settings)
    assert "mathutils.py" in result.files
    assert any(p.startswith("tests/test_") for p in result.files)
    assert result.report.steps.passed == 1, result.report
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=result.workspace,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert " passed" in tests.stdout
