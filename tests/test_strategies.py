"""Strategies own their settings: built from the run settings, with the protocol's defaults for the step limits
the user left unset. (A budget stop returned as ``stopped``, with the steps before it: tests/test_budgets.py.)"""

from __future__ import annotations

import pytest

from l2mac.control import StepLimits
from l2mac.control.text import TEXT
from l2mac.control.tool_calls import TOOL_CALLS
from l2mac.errors import ConfigError
from l2mac.settings import RunSettings
from l2mac.soa.agents import AgentLimits
from l2mac.strategies import SequentialStrategy, SoAStrategy, strategy_for


def test_step_limits_left_unset_are_the_protocols_own() -> None:
    text = strategy_for(RunSettings(), TEXT)
    tools = strategy_for(RunSettings(), TOOL_CALLS)
    assert isinstance(text, SequentialStrategy) and isinstance(tools, SequentialStrategy)
    assert (text.limits.max_check_failures, text.limits.samples) == (TEXT.check_failures, TEXT.samples) == (8, 3)
    assert (tools.limits.max_check_failures, tools.limits.samples) == (4, 0)


def test_step_limits_the_user_set_win_over_the_protocols() -> None:
    rs = RunSettings(max_check_failures=2, samples=0, max_turns=7, steps=3, max_steps=2, reflect=True)
    strategy = strategy_for(rs, TEXT)
    assert strategy == SequentialStrategy(
        StepLimits(7, 2, 3, samples=0), plan_steps=3, step_budget=2, reflect=True, readme=True
    )


def test_soa_takes_its_agent_limits_from_the_settings() -> None:
    strategy = strategy_for(RunSettings(strategy="soa", max_agents=5, max_depth=1, concurrency=2), TOOL_CALLS)
    assert strategy == SoAStrategy(AgentLimits(max_agents=5, max_depth=1, concurrency=2))


def test_an_unknown_strategy_is_a_clear_error() -> None:
    rs = RunSettings.model_construct(strategy="waterfall")
    with pytest.raises(ConfigError, match="unknown strategy 'waterfall'; choose one of: l2mac, soa"):
        strategy_for(rs, TOOL_CALLS)
