"""Budgets bind: a run stops at each limit within one call of it, saved, and resumes with a larger budget."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage
from scenario import full_run_replies

from l2mac.errors import BudgetExceeded
from l2mac.models.client import ModelClient
from l2mac.models.scripted import ScriptedModel
from l2mac.run import resume_l2mac, run_l2mac

from conftest import make_settings

TASK = "Build a todo app"


def test_token_budget_is_never_crossed_and_a_larger_one_resumes(tmp_path: Path) -> None:
    limit = 8_000  # the whole run takes about 6,500; each call reserves its prompt plus 4,096 of answer
    script = ScriptedModel(full_run_replies())
    result = run_l2mac(TASK, make_settings(tmp_path, max_tokens=limit), model=script.model)
    assert result.report.status == "stopped" and "token budget" in result.report.stopped_reason
    assert result.report.stopped_by == "budget"  # a benchmark scores it; a provider's stop it makes again
    assert "l2mac resume" in result.report.stopped_reason
    used = result.report.tokens.total
    assert 0 < used <= limit
    made = len(script.requests)
    assert 0 < made < 8
    rest = ScriptedModel(full_run_replies()[made:])
    again = resume_l2mac(result.workspace, model=rest.model, overrides={"max_tokens": 1_000_000})
    assert again.ok and rest.remaining == 0 and len(rest.requests) == 8 - made


class PricedModel(FunctionModel):
    """Answers like gpt-4o and is priced like it (the reservation looks the price up by provider and name)."""

    @property
    def system(self) -> str:
        return "openai"


def _priced_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(
        parts=[TextPart("ok")],
        usage=RequestUsage(input_tokens=50_000, output_tokens=1_000),
        model_name="gpt-4o",
        provider_name="openai",
    )


def test_cost_budget_reserves_the_worst_case_before_each_call() -> None:
    model = PricedModel(_priced_answer, model_name="gpt-4o")
    client = ModelClient(model, max_cost=0.40, max_output_tokens=4_096)
    prompt = [ModelRequest(parts=[UserPromptPart("x" * 140_000)])]  # about 40,000 tokens
    calls = 0
    with pytest.raises(BudgetExceeded, match=r"cost budget: \$0\.\d+ of \$0\.40 spent, and the next call could cost"):
        while True:
            asyncio.run(client.request(prompt, purpose="t"))
            calls += 1
    # each call costs about $0.135 (50k in, 1k out at gpt-4o prices): after two ($0.27), the worst case of a
    # third (40k in, 4,096 out: about $0.14) would cross $0.40, so it is not made
    assert calls == 2
    assert client.usage.cost_usd <= 0.40 and client.usage.requests == calls


def test_prompt_tokens_read_from_the_cache_do_not_count_against_the_token_budget() -> None:
    """Seen: another answer to the same prompt (5,112 tokens, served from llama-server's cache in 2 s) was
    counted in full, and a ClassEval task stopped at its 60,000-token budget after 800 s."""

    def answer(read_from_cache: int) -> FunctionModel:
        usage = RequestUsage(input_tokens=5_000, output_tokens=50, cache_read_tokens=read_from_cache)
        return FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("ok")], usage=usage))

    prompt = [ModelRequest(parts=[UserPromptPart("x" * 3_500)])]  # about 1,000 tokens
    client = ModelClient(answer(4_900), max_tokens=20_000, max_output_tokens=1_000)
    for _ in range(10):  # 10 x 5,050 tokens sent and received: 50,500, far above the budget
        asyncio.run(client.request(prompt, purpose="t"))
    assert client.usage.total_tokens == 50_500 and client.usage.uncached_tokens == 1_500
    uncached = ModelClient(answer(0), max_tokens=20_000, max_output_tokens=1_000)
    with pytest.raises(BudgetExceeded, match=r"token budget: [\d,]+ of 20,000 tokens used, and the next call"):
        for _ in range(10):
            asyncio.run(uncached.request(prompt, purpose="t"))
    assert uncached.usage.requests <= 4


def test_step_budget_stops_after_that_many_steps_and_resumes(tmp_path: Path) -> None:
    script = ScriptedModel(full_run_replies())
    result = run_l2mac(TASK, make_settings(tmp_path, max_steps=1), model=script.model)
    assert result.report.status == "stopped" and "step budget: 1 steps run" in result.report.stopped_reason
    assert [o.status.value for o in result.outcomes] == ["passed"]
    assert result.report.steps.passed == 1 and len(script.requests) == 6  # plan + step 1, no step 2 call
    rest = ScriptedModel(full_run_replies()[6:])
    again = resume_l2mac(result.workspace, model=rest.model, overrides={"max_steps": 5})
    assert again.ok and rest.remaining == 0 and again.report.journal.replayed_calls == 6


def test_wall_time_budget_stops_the_run_before_the_next_call(tmp_path: Path) -> None:
    replies = full_run_replies()
    first = replies[0]

    def slow_plan(messages: list[ModelMessage]) -> ModelResponse:
        time.sleep(1.2)
        return first(messages) if callable(first) else first

    script = ScriptedModel([slow_plan, *replies[1:]])
    result = run_l2mac(TASK, make_settings(tmp_path, max_wall_time_s=1.0), model=script.model)
    assert result.report.status == "stopped" and "wall-time budget" in result.report.stopped_reason
    assert len(script.requests) == 1  # the call under way finished; no other was made
