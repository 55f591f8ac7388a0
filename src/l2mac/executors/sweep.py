"""A sweep: the items a results file does not hold yet, run on an executor, each result saved the moment it
comes back, and each invocation's conditions recorded; an interrupted sweep is resumed by running it again
with the same results file. Benchmarks (tasks) and batches (projects) both sweep."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from l2mac.errors import ProviderError
from l2mac.executors.base import Executor, Start, Worker
from l2mac.executors.threads import ThreadExecutor

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


@dataclass(frozen=True)
class Timed(Generic[_Result]):
    """What a worker sends back for one item: its result, or the error it ended with, and its wall time.
    ``fault``: the provider failed it (after its retries), so it says nothing of the item and is made again."""

    result: _Result | None
    error: str | None
    wall_time_s: float
    fault: bool = False


def timed(start: Start[_Item, _Result]) -> Worker[_Item, Timed[_Result]]:
    """The worker ``start`` makes, each item timed where it runs and its failure made its outcome (an item's
    failure is its result, not the sweep's end)."""
    inner = start()

    def work(item: _Item) -> Timed[_Result]:
        began = time.monotonic()
        try:
            return Timed(inner.work(item), None, round(time.monotonic() - began, 1))
        except Exception as e:
            fault = isinstance(e, ProviderError)
            return Timed(None, f"{type(e).__name__}: {e}", round(time.monotonic() - began, 1), fault)

    return Worker(work, inner.close)


def sweep(
    items: Sequence[_Item],
    data: dict[str, Any],
    start: Start[_Item, _Result],
    *,
    key: Callable[[_Item], str],
    entry: Callable[[_Item, Timed[_Result]], dict[str, Any]],
    save: Callable[[], None],
    executor: Executor,
    said: Callable[[_Item, Mapping[str, Any]], None] = lambda item, entry: None,
    dropped: Callable[[_Item, str], None] = lambda item, error: None,
    into: str = "tasks",
) -> None:
    """Run each of ``items`` whose ``key`` is not yet in ``data[into]`` on ``executor`` (its workers made by
    ``start``), putting ``entry(item, outcome)`` there and calling ``save`` and ``said`` as each one ends. The
    invocation's conditions (executor, serving and code version from ``data``) go to ``data["sessions"]``,
    saved at once when it is interrupted; the items in flight then are dropped (a rerun makes them), and so is an
    item the provider failed (``dropped`` is told): its outcome would score the provider, not the item."""
    done: dict[str, dict[str, Any]] = data.setdefault(into, {})
    todo = [item for item in items if key(item) not in done]
    began = time.monotonic()
    sessions: list[dict[str, Any]] = data.get("sessions", [])

    def session(finished: int, interrupted: bool = False) -> dict[str, Any]:
        elapsed = round(time.monotonic() - began, 1)
        record = {into: finished, "workers": executor.workers, "elapsed_s": elapsed, "serving": data.get("serving")}
        if not isinstance(executor, ThreadExecutor):
            record["executor"] = executor.describe
        record["l2mac"] = data.get("l2mac")
        if data.get("workspace"):  # where this invocation's projects are (each invocation has its own)
            record["workspace"] = data["workspace"]
        return {**record, "interrupted": True} if interrupted else record

    stopping = threading.Event()
    saving = threading.Lock()  # one save at a time: an item's, or the interrupted session's

    def one(item: _Item, outcome: Timed[_Result]) -> None:
        with saving:
            if stopping.is_set():
                return  # interrupted: its model went away under it, so this is no outcome
            if outcome.fault:
                dropped(item, outcome.error or "")
                return
            done[key(item)] = entry(item, outcome)
            save()
        said(item, done[key(item)])

    try:
        executor.run(functools.partial(timed, start), todo, one, stopping)
    except BaseException as e:  # Ctrl-C: no new item starts, and what finished is kept
        with saving:
            stopping.set()
            finished = sum(1 for item in todo if key(item) in done)
            if finished or isinstance(e, KeyboardInterrupt):  # not a set-up error before anything ran
                data["sessions"] = [*sessions, session(finished, interrupted=True)]
                save()
        raise
    if todo:
        data["sessions"] = [*sessions, session(len(todo))]
