"""Threads in this process: one worker state shared by ``workers`` threads (a llama-server's slots, a cloud
client), the default executor."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from l2mac.executors.base import Done, Start

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


@dataclass(frozen=True)
class ThreadExecutor:
    workers: int = 1

    @property
    def describe(self) -> str:
        return f"in-process, {self.workers} thread{'s' if self.workers != 1 else ''}"

    def run(
        self,
        start: Start[_Item, _Result],
        items: Sequence[_Item],
        done: Done[_Item, _Result],
        stopping: threading.Event,
    ) -> None:
        if not items:
            return
        worker = start()
        lock = threading.Lock()

        def one(item: _Item) -> None:
            result = worker.work(item)
            with lock:
                done(item, result)

        try:
            run_in_threads(one, list(items), self.workers, stopping)
        finally:
            worker.close()


def run_in_threads(work: Callable[[_Item], None], items: list[_Item], workers: int, stopping: threading.Event) -> None:
    """``work`` on each of ``items``, ``workers`` at once, in order; the first error is raised once the others
    end. The threads are daemons and the wait wakes twice a second, so Ctrl-C ends the process at once: with
    a thread pool, the interpreter waited at exit for every task in flight to finish its minutes of work. What
    the tasks in flight leave behind (a scratch folder, a child process) goes with the process."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    queue = list(reversed(items))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        while not stopping.is_set() and not errors:
            with lock:
                if not queue:
                    return
                item = queue.pop()
            try:
                work(item)
            except BaseException as e:  # raised in the caller's thread
                errors.append(e)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(workers, len(items)))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
    except BaseException:
        stopping.set()  # no worker takes another item
        raise
    if errors:
        raise errors[0]
