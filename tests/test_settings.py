"""Settings layers (file < environment < flags), the config template, and domains."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from l2mac.domains import load_domain
from l2mac.errors import ConfigError
from l2mac.settings import init_config, load_settings


def test_layers_file_then_environment_then_flags(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "llm:\n  api_type: openai\n  model: gpt-4o-mini\n  api_key: sk-file\n"
        "run:\n  max_cost: 1.0\n  workspace: from_file\n"
    )
    s = load_settings(config_path=cfg, environ={})
    assert (s.llm.model, s.llm.api_key.get_secret_value(), s.run.max_cost) == ("gpt-4o-mini", "sk-file", 1.0)
    s = load_settings(config_path=cfg, environ={"L2MAC_MODEL": "gpt-4o", "L2MAC_MAX_COST": "2.5"})
    assert (s.llm.model, s.run.max_cost, s.run.workspace) == ("gpt-4o", 2.5, Path("from_file"))
    s = load_settings(
        config_path=cfg,
        environ={"L2MAC_MODEL": "gpt-4o"},
        llm={"model": "anthropic:claude-x"},
        run={"max_cost": 3.0, "steps": None},
    )
    assert (s.llm.model, s.run.max_cost) == ("anthropic:claude-x", 3.0)


def test_provider_keys_in_the_environment_configure_a_model() -> None:
    assert load_settings(config_path=Path("/nonexistent"), environ={"OPENAI_API_KEY": "k"}).llm.model == "gpt-4o"
    s = load_settings(config_path=Path("/nonexistent"), environ={"ANTHROPIC_API_KEY": "k"})
    assert s.llm.api_type == "anthropic" and s.llm.model
    assert not load_settings(config_path=Path("/nonexistent"), environ={}).llm.configured


def test_init_config_writes_a_private_template_once(tmp_path: Path) -> None:
    path = tmp_path / ".l2mac" / "config.yaml"
    assert init_config(path) is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "api_type" in path.read_text()
    assert init_config(path) is False
    # the untouched template is treated as "not configured", never sends the placeholder key
    assert not load_settings(config_path=path, environ={}).llm.configured


def test_bad_config_files_give_actionable_errors(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("llm: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(config_path=bad, environ={})
    bad.write_text("run:\n  max_cost: -1\n")
    with pytest.raises(ConfigError, match="max_cost"):
        load_settings(config_path=bad, environ={})


def test_domains_load_from_data_files_and_custom_overrides(tmp_path: Path) -> None:
    book = load_domain("book")
    assert not book.python_checks and "run_tests" not in book.tools
    custom = tmp_path / "prompts.yaml"
    custom.write_text("name: haiku\nprompts:\n  step_system: You write haiku about $task.\n")
    domain = load_domain("custom", custom)
    assert domain.name == "haiku" and domain.render("step_system", task="cats") == "You write haiku about cats."
    assert "plan_request" in domain.prompts  # the rest comes from the codebase set
    with pytest.raises(ConfigError, match="needs a prompt set"):
        load_domain("custom")
    with pytest.raises(ConfigError, match="unknown domain"):
        load_domain("poetry")


def test_a_seed_from_the_environment_or_a_flag_reaches_the_models_settings(tmp_path: Path) -> None:
    from l2mac.models.registry import model_settings

    none = tmp_path / "none.yaml"
    assert load_settings(config_path=none, environ={}).llm.seed is None
    assert "seed" not in model_settings(load_settings(config_path=none, environ={}).llm)
    s = load_settings(config_path=none, environ={"L2MAC_SEED": "7"})
    assert s.llm.seed == 7 and model_settings(s.llm)["seed"] == 7
    assert load_settings(config_path=none, environ={"L2MAC_SEED": "7"}, llm={"seed": 3}).llm.seed == 3
    with pytest.raises(ConfigError, match="seed"):
        load_settings(config_path=none, environ={"L2MAC_SEED": "-1"})
