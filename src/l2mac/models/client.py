"""One door to the model: retries with backoff, usage and cost per call, budgets, and a record of every call."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
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
from pydantic_ai.usage import RequestUsage

from l2mac.context import estimate_messages
from l2mac.errors import BudgetExceeded, ProviderError
from l2mac.journal import Journal, JournaledCall, request_key
from l2mac.models.local.given import with_given
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
    replayed: bool = False
    #: why the answer ended: stop, length (cut off at its token limit), loop_cut (a local model's loop, cut)
    finish: str | None = None
    #: seconds spent reading the prompt, when the model says (the embedded model does); the rest generated
    prompt_s: float | None = None


def _finish(response: ModelResponse) -> str | None:
    if (response.provider_details or {}).get("loop_cut"):
        return "loop_cut"
    return response.finish_reason


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


def _worst_case_cost(model: Model, input_tokens: int, output_tokens: int) -> float | None:
    """The price of a call of this size, or None when the model's price is unknown."""
    probe = ModelResponse(
        parts=[],
        usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        model_name=model.model_name,
        provider_name=model.system,
    )
    return _cost(probe)


@dataclass
class ModelClient:
    """Wraps a pydantic-ai ``Model``. ``on_call`` receives a ``CallRecord`` after every call.

    Budgets bind before a call is made: its worst case (the prompt plus ``max_output_tokens`` of answer, at the
    model's price) is reserved, and a call that could cross ``max_tokens`` or ``max_cost`` is not made. A
    ``journal`` records every answer and serves journaled ones to a resumed run without calling the model."""

    model: Model
    settings: ModelSettings | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_tokens: int | None = None
    max_cost: float | None = None
    max_output_tokens: int = 4096
    deadline: float | None = None  # time.monotonic() after which no call is made (--max-wall-time)
    journal: Journal | None = None
    on_call: Callable[[CallRecord], None] | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    usage: Usage = field(default_factory=Usage)
    #: whether requests made at once are answered at once (else they queue, and are better made in turn)
    parallel: bool = True
    #: whether the model continues an answer the request begins (messages ending with a text response)
    continues: bool = False

    def check_budget(self, prompt_tokens: int = 0) -> None:
        """Raise BudgetExceeded if a call with ``prompt_tokens`` of prompt could cross a limit."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise BudgetExceeded("wall-time budget spent (raise --max-wall-time to go further)")
        worst_out = self.max_output_tokens if prompt_tokens else 0
        used = self.usage.uncached_tokens
        if self.max_tokens is not None and used + prompt_tokens + worst_out > self.max_tokens:
            cached = self.usage.cache_read_tokens
            raise BudgetExceeded(
                f"token budget: {used:,} of {self.max_tokens:,} tokens used"
                + (f" (besides {cached:,} prompt tokens read from the model's cache)" if cached else "")
                + f", and the next call could use {prompt_tokens + worst_out:,} more (raise --max-tokens to go further)"
            )
        if self.max_cost is not None:
            worst = _worst_case_cost(self.model, prompt_tokens, worst_out) if prompt_tokens else 0.0
            if self.usage.cost_usd + (worst or 0.0) > self.max_cost or self.usage.cost_usd >= self.max_cost:
                raise BudgetExceeded(
                    f"cost budget: ${self.usage.cost_usd:.4f} of ${self.max_cost:.2f} spent, and the next call "
                    f"could cost ${worst or 0.0:.4f} more (raise --max-cost to go further)"
                )

    async def request(
        self,
        messages: Sequence[ModelMessage],
        tools: Sequence[ToolDefinition] = (),
        *,
        purpose: str,
        allow_text: bool = True,
        temperature: float | None = None,
        given: Mapping[str, str] | None = None,
    ) -> ModelResponse:
        """Send ``messages``; retry transient failures; raise ContextOverflow, ProviderError or BudgetExceeded.

        ``temperature`` overrides the configured one for this request (e.g. to get a different answer after
        a model repeated itself). ``given``: for an answer the messages begin, the text of definitions the model
        would otherwise copy, by name (see :mod:`l2mac.models.local.given`); only a model that continues begun
        answers is sent them."""
        seq, key = 0, ""
        if self.journal is not None:
            seq = self.journal.next_seq()
            key = request_key(messages, purpose, [t.name for t in tools])
            if (hit := self.journal.lookup(seq, key)) is not None:
                return self._replay(hit)
        self.check_budget(estimate_messages(messages) + 1)
        settings = self.settings
        if temperature is not None:
            settings = cast(ModelSettings, {**(settings or {}), "temperature": temperature})
        if given and self.continues:
            settings = with_given(settings, given)
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
        if self.journal is not None:  # before anything acts on the answer: a crash from here on keeps it
            self.journal.append(JournaledCall(seq, key, purpose, response, cost))
        self._count(response, purpose, cost, latency_s=round(latency, 3), retries=attempt)
        return response

    def _replay(self, call: JournaledCall) -> ModelResponse:
        """A journaled answer: counted in the usage (it was paid for), recorded, and no model call made."""
        self._count(call.response, call.purpose, call.cost_usd, latency_s=0.0, retries=0, replayed=True)
        return call.response

    def _count(
        self,
        response: ModelResponse,
        purpose: str,
        cost: float | None,
        *,
        latency_s: float,
        retries: int,
        replayed: bool = False,
    ) -> None:
        """Add an answer to the usage and record it."""
        u = response.usage
        self.usage.add(u.input_tokens, u.output_tokens, cost, cache_read_tokens=u.cache_read_tokens)
        if self.on_call is not None:
            self.on_call(
                CallRecord(
                    purpose=purpose,
                    model=response.model_name or self.model.model_name,
                    input_tokens=u.input_tokens,
                    output_tokens=u.output_tokens,
                    cost_usd=cost,
                    latency_s=latency_s,
                    retries=retries,
                    tool_calls=[c.tool_name for c in response.tool_calls],
                    response=_response_parts(response),
                    replayed=replayed,
                    finish=_finish(response),
                    prompt_s=None if replayed else (response.provider_details or {}).get("prompt_s"),
                )
            )
