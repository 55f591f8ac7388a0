"""Model access: provider construction, retries with backoff, cost accounting, budgets."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.exceptions import ModelAuthenticationError, ModelRateLimitError, ModelServerError
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from l2mac.errors import BudgetExceeded, ConfigError, ProviderError
from l2mac.models.client import CallRecord, ModelClient, RetryPolicy
from l2mac.models.registry import build_model, context_window_for
from l2mac.settings import LLMSettings

MSG = [ModelRequest(parts=[UserPromptPart("hi")])]


def flaky(failures: list[Exception]) -> FunctionModel:
    def answer(messages, info):
        if failures:
            raise failures.pop(0)
        return ModelResponse(parts=[TextPart("ok")])

    return FunctionModel(answer, model_name="flaky")


def test_rate_limits_and_server_errors_are_retried_with_backoff_honouring_retry_after() -> None:
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    errors = [ModelRateLimitError("flaky", "slow down", retry_after=7.0), ModelServerError("flaky", "boom")]
    records: list[CallRecord] = []
    client = ModelClient(
        flaky(errors), retry=RetryPolicy(max_retries=3, base_delay_s=1), sleep=sleep, on_call=records.append
    )
    response = asyncio.run(client.request(MSG, purpose="t"))
    assert response.text == "ok"
    assert slept[0] == 7.0 and 1.0 <= slept[1] <= 2.0  # Retry-After, then jittered exponential backoff
    assert records[0].retries == 2 and records[0].cost_usd is None  # no price known for a fake model


def test_retries_give_up_with_a_provider_error() -> None:
    async def sleep(_: float) -> None:
        return None

    client = ModelClient(
        flaky([ModelServerError("flaky", "boom") for _ in range(5)]), retry=RetryPolicy(max_retries=2), sleep=sleep
    )
    with pytest.raises(ProviderError, match="after 3 attempts"):
        asyncio.run(client.request(MSG, purpose="t"))


def test_non_retryable_errors_are_not_retried() -> None:
    client = ModelClient(flaky([ModelAuthenticationError("flaky", "bad key")]))
    with pytest.raises(ProviderError, match="bad key"):
        asyncio.run(client.request(MSG, purpose="t"))


def test_budgets_are_checked_before_each_call() -> None:
    model = flaky([])
    client = ModelClient(model, max_tokens=1)
    with pytest.raises(BudgetExceeded, match="token budget: 0 of 1 tokens used, and the next call could use"):
        asyncio.run(client.request(MSG, purpose="t"))
    client = ModelClient(flaky([]), max_cost=0.5)
    client.usage.add(1, 1, 0.6)
    with pytest.raises(BudgetExceeded, match="cost budget"):
        asyncio.run(client.request(MSG, purpose="t"))


def test_known_price_is_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic_ai.usage import RequestUsage

    def answer(messages, info):
        return ModelResponse(
            parts=[TextPart("ok")],
            usage=RequestUsage(input_tokens=1_000_000, output_tokens=0),
            model_name="gpt-4o",
            provider_name="openai",
        )

    client = ModelClient(FunctionModel(answer, model_name="gpt-4o"))
    asyncio.run(client.request(MSG, purpose="t"))
    assert client.usage.cost_known and client.usage.cost_usd > 0


def test_providers_are_built_from_settings() -> None:
    info = build_model(LLMSettings(model="gpt-4o", api_key="sk-x"))
    assert (info.provider, info.name, info.context_window) == ("openai", "gpt-4o", 128_000)
    info = build_model(LLMSettings(model="anthropic:claude-sonnet-4-5", api_key="k"))
    assert info.provider == "anthropic" and info.context_window == 200_000
    info = build_model(LLMSettings(model="ollama:qwen2.5-coder:7b"))
    assert info.provider == "ollama" and info.name == "qwen2.5-coder:7b"
    info = build_model(LLMSettings(model="my-model", base_url="http://localhost:8000/v1", context_window=4096))
    assert info.provider == "openai-compatible" and info.context_window == 4096
    info = build_model(
        LLMSettings(model="azure:deploy", base_url="https://x.openai.azure.com", api_key="k", api_version="2024-06-01")
    )
    assert info.provider == "azure"


def test_missing_keys_and_urls_name_their_fix() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        build_model(LLMSettings(model="gpt-4o"), environ={})
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        build_model(LLMSettings(model="anthropic:claude-x"), environ={})
    assert build_model(LLMSettings(model="anthropic:claude-x"), environ={"ANTHROPIC_API_KEY": "k"}).name
    with pytest.raises(ConfigError, match="--base-url"):
        build_model(LLMSettings(model="vllm:qwen"))
    with pytest.raises(ConfigError, match="unknown provider"):
        build_model(LLMSettings(model="x", api_type="carrier-pigeon"))


def test_context_window_lookup_uses_the_longest_prefix() -> None:
    assert context_window_for("gpt-4o-mini") == 128_000
    assert context_window_for("gpt-4") == 8_192
    assert context_window_for("Qwen/qwen2.5-coder-7b-instruct") == 32_768
    assert context_window_for("mystery") == 8_192
