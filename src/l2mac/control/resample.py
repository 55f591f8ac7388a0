"""Asking again for an answer that fails what it is held to: the same request, sampled more freely each time,
until an answer holds. One mechanism for the control unit's steps and the organisation's agents.

A small model at its own temperature sends the same wrong body back however often it is asked (seen on
ClassEval_18 at 7adb4e5: an agent wrote ``'FirstName'`` for the docstring's ``'firstName'`` with the same 87
tokens four times); sampled more freely, it often finds the body its examples hold."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

#: how freely an answer asked for again is sampled, and how much more each time after
RESAMPLE_TEMPERATURE = 0.8
RESAMPLE_STEP = 0.1
#: answers already found failing, in one round of resampling, after which no more are asked for
MAX_KNOWN_FAILURES = 2

#: whether an answer holds
Holds = Callable[[ModelResponse], Awaitable[bool]]
#: the same request again, sampled at the temperature given; None when it cannot be asked (its context overflows)
AskAgain = Callable[[float], Awaitable[ModelResponse | None]]
#: told of each answer tried: its number (0: the first), whether it holds, whether it was known to fail
Tried = Callable[[int, bool, bool], None]


def resample_temperature(n: int) -> float:
    """The temperature of the ``n``-th answer asked for again (from 1)."""
    return min(1.0, RESAMPLE_TEMPERATURE + RESAMPLE_STEP * (n - 1))


def _said(response: ModelResponse) -> str:
    """What an answer says: its text and its calls, as one string to compare answers by."""
    return "\n".join(
        p.content if isinstance(p, TextPart) else f"{p.tool_name}{p.args_as_json_str()}"
        for p in response.parts
        if isinstance(p, (TextPart, ToolCallPart))
    )


async def first_that_holds(
    first: ModelResponse,
    again: AskAgain,
    holds: Holds,
    *,
    resamples: int,
    request: str,
    failed: set[tuple[str, str]],
    tried: Tried = lambda n, ok, known: None,
) -> ModelResponse:
    """The first of ``first`` and up to ``resamples`` more answers to the same request that holds; else ``first``.

    An answer found failing is remembered in ``failed`` (by ``request``, the request's key, and what it says) and
    not checked again; after MAX_KNOWN_FAILURES such answers no more are asked for: sampled more freely, the model
    sends the same answer back (seen on ClassEval at 9e7c0bc: 17 of 44 failing resamples were answers already
    found failing). An answer is known to fail only for the very request it answered: the same body may hold for
    another function, or for this one once a function it calls is mended."""
    known = 0
    for n in range(resamples + 1):
        answer = first if n == 0 else await again(resample_temperature(n))
        if answer is None:
            break
        key = (request, _said(answer))
        if key in failed:
            known += 1
            tried(n, False, True)
            if known >= MAX_KNOWN_FAILURES:
                break
            continue
        ok = await holds(answer)
        tried(n, ok, False)
        if ok:
            return answer
        failed.add(key)
    return first
