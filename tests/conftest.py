from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from l2mac.models.scripted import Reply, ScriptedModel
from l2mac.run import RunResult, run_l2mac
from l2mac.settings import Settings, load_settings


@pytest.fixture(autouse=True)
def _no_real_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Tests never read the developer's ~/.l2mac, API keys or downloaded models (except the marked ones)."""
    monkeypatch.setenv("L2MAC_CONFIG", str(tmp_path / "no-config.yaml"))
    if request.node.get_closest_marker("local_model") is None:
        monkeypatch.setenv("L2MAC_MODELS_DIR", str(tmp_path / "no-models"))
    for var in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "L2MAC_MODEL",
        "L2MAC_API_KEY",
        "L2MAC_BASE_URL",
        "L2MAC_WORKSPACE",
        "L2MAC_MAX_COST",
        "L2MAC_MAX_TOKENS",
        "L2MAC_DOMAIN",
        "L2MAC_API_TYPE",
    ):
        monkeypatch.delenv(var, raising=False)


def make_settings(tmp_path: Path, llm: dict[str, Any] | None = None, **run: Any) -> Settings:
    run.setdefault("workspace", tmp_path / "ws")
    run.setdefault("project_name", "proj")
    run.setdefault("project_env", False)  # offline: a run never installs (tests/test_environment*.py do)
    run.setdefault("verify_readme", False)  # nor runs a README's pip install (tests/test_readme.py does)
    run.setdefault("readme_step", False)  # nor adds a README step the script has no answers for
    run.setdefault("report_page", False)  # nor draws its page (tests/test_visual_report.py does)
    return load_settings(
        config_path=tmp_path / "none.yaml", environ={}, llm={"context_window": 16000, **(llm or {})}, run=run
    )


def run_scripted(
    tmp_path: Path, replies: list[Reply], task: str = "Build a todo app", **run: Any
) -> tuple[RunResult, ScriptedModel]:
    script = ScriptedModel(list(replies))
    result = run_l2mac(task, make_settings(tmp_path, **run), model=script.model)
    return result, script
