"""Work run at once that stops as one: when one piece raises, the rest are cancelled before it propagates."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def together(work: Iterable[Awaitable[T]]) -> list[T]:
    """Run ``work`` at once and return what each gave, in order; when one raises (the run's budget spent, the
    provider failing), the others are cancelled before it propagates, so nothing writes to the project or asks the
    model after the run has stopped (``asyncio.gather`` alone leaves them running)."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException as raised:
        for task in tasks:
            task.cancel()
        ended = await asyncio.gather(*tasks, return_exceptions=True)
        for other in ended:  # what the others raised is said with it, not lost (a bug beside a stop)
            if isinstance(other, Exception) and other is not raised and not isinstance(other, asyncio.CancelledError):
                raised.add_note(f"also raised alongside: {type(other).__name__}: {other}")
        raise
