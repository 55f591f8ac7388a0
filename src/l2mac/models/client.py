"""One door to the model: retries with backoff, usage and cost per call, budgets, and a record of every call."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import cast

from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelRateLimitError,
    ModelServerError,
    ModelUnavailableError,
)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from l2mac.errors import BudgetExceeded, ProviderError
from l2mac.types import Usage

RETRYABLE = (ModelRateLimitError, ModelUnavailableError, ModelServerError, ModelConnectionError, TimeoutError)


class ContextOverflow(Exception):
    """The provider said the request is larger than the context window."""


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay_s * 5)
        backoff = min(self.max_delay_s, self.base_delay_s * (2.0**attempt))
        return backoff * (0.5 + random.random() / 2)


@dataclass(frozen=True)
class CallRecord:
    """What one model call cost. ``cost_usd`` is None when the price is unknown."""

    purpose: str
    model: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    latency_s: float
    retries: int
    tool_calls: list[str]
    response: list[dict[str, str]] = field(default_factory=list)


def _cost(response: ModelResponse) -> float | None:
    try:
        price: Decimal = response.cost().total_price
        return float(price)
    except Exception:  # genai-prices raises LookupError, ValueError, AssertionError for unknown models
        return None


def _response_parts(response: ModelResponse) -> list[dict[str, str]]:
    """The answer as plain data for the run log: text and tool calls with their raw arguments."""
    out: list[dict[str, str]] = []
    for part in response.parts:
        if isinstance(part, TextPart) and part.content:
            out.append({"text": part.content})
        elif isinstance(part, ToolCallPart):
            args = part.args if isinstance(part.args, str) else json.dumps(part.args or {})
            out.append({"tool": part.tool_name, "args": args})
    return out


@dataclass
class ModelClient:
    """Wraps a pydantic-ai ``Model``. ``on_call`` receives a ``CallRecord`` after every call."""

    model: Model
    settings: ModelSettings | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_tokens: int | None = None
    max_cost: float | None = None
    on_call: Callable[[CallRecord], None] | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    usage: Usage = field(default_factory=Usage)

    def check_budget(self) -> None:
        if self.max_tokens is not None and self.usage.total_tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"token budget spent: {self.usage.total_tokens:,} of {self.max_tokens:,} tokens used "
                "(raise --max-tokens to go further)"
            )
        if self.max_cost is not None and self.usage.cost_usd >= self.max_cost:
            raise BudgetExceeded(
                f"cost budget spent: ${self.usage.cost_usd:.4f} of ${self.max_cost:.2f} "
                "(raise --max-cost to go further)"
            )

    async def request(
        self,
        messages: Sequence[ModelMessage],
        tools: Sequence[ToolDefinition] = (),
        *,
        purpose: str,
        allow_text: bool = True,
        temperature: float | None = None,
    ) -> ModelResponse:
        """Send ``messages``; retry transient failures; raise ContextOverflow, ProviderError or BudgetExceeded.

        ``temperature`` overrides the configured one for this request (e.g. to get a different answer after
        a model repeated itself)."""
        self.check_budget()
        settings = self.settings
        if temperature is not None:
            settings = cast(ModelSettings, {**(settings or {}), "temperature": temperature})
        params = ModelRequestParameters(function_tools=list(tools), allow_text_output=allow_text or not tools)
        attempt = 0
        start = time.monotonic()
        while True:
            try:
                response = await model_request(
                    self.model, list(messages), model_settings=settings, model_request_parameters=params
                )
                break
            except ModelContextWindowExceededError as e:
                raise ContextOverflow(str(e)) from e
            except RETRYABLE as e:
                if attempt >= self.retry.max_retries:
                    raise ProviderError(
                        f"{self.model.model_name}: {type(e).__name__} after {attempt + 1} attempts: {e}"
                    ) from e
                await self.sleep(self.retry.delay(attempt, getattr(e, "retry_after", None)))
                attempt += 1
            except ModelAPIError as e:
                raise ProviderError(f"{self.model.model_name}: {e}") from e
        latency = time.monotonic() - start
        cost = _cost(response)
        self.usage.add(response.usage.input_tokens, response.usage.output_tokens, cost)
        if self.on_call is not None:
            self.on_call(
                CallRecord(
                    purpose=purpose,
                    model=response.model_name or self.model.model_name,
                    input_tokens=response.usage.input_tokens,
                    output_tokens=response.usage.output_tokens,
                    cost_usd=cost,
                    latency_s=round(latency, 3),
                    retries=attempt,
                    tool_calls=[c.tool_name for c in response.tool_calls],
                    response=_response_parts(response),
                )
            )
        return response
