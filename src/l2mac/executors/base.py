"""The executor seam: what every executor does, and choosing one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def _nothing() -> None:
    return None


@dataclass
class Worker(Generic[_Item, _Result]):
    """One worker's state: ``work`` does one item (in any thread of the worker), ``close`` frees what it holds
    (a model, a llama-server child) when the executor is done with it."""

    work: Callable[[_Item], _Result]
    close: Callable[[], None] = field(default=_nothing)


#: makes a worker where it runs (in this process, or in a Ray actor: then it must pickle)
Start = Callable[[], Worker[_Item, _Result]]
#: takes an item's result in the caller's process, one call at a time
Done = Callable[[_Item, _Result], None]


class Executor(Protocol):
    """Runs ``work`` over items, ``workers`` at once, handing each result to ``done`` as it finishes."""

    @property
    def workers(self) -> int: ...

    @property
    def describe(self) -> str: ...

    def run(
        self,
        start: Start[_Item, _Result],
        items: Sequence[_Item],
        done: Done[_Item, _Result],
        stopping: threading.Event,
    ) -> None:
        """Each item once, results to ``done`` in the caller's process as they come; no new item starts once
        ``stopping`` is set. Ctrl-C (or any error) ends the call at once, the items in flight dropped."""
        ...
