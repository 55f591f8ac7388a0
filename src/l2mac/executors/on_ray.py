"""Ray: each worker a Ray actor with its own state (its model loaded once, reused across its tasks) and its
CPU request, on an existing cluster (``address``) or a local instance started and stopped here.

The caller's process hands out one item per idle worker and takes each result as it finishes, so results are
saved as they arrive and an interrupted sweep resumes without redoing finished work. A worker that dies (its
node lost, its process killed) gives its item back to the queue, where another worker takes it; nothing it
finished is lost, and nothing is finished twice. Only this module imports ray (``l2mac[ray]``).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from l2mac.errors import ConfigError, L2MACError
from l2mac.executors.base import Done, Start, Worker

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")

#: how often the caller's loop looks up from waiting (Ctrl-C, a stop asked for)
_WAKE_S = 0.5


class WorkersLost(L2MACError):
    """Every Ray worker died before the items were done."""


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray executor needs Ray: pip install 'l2mac[ray]'") from None
    return ray


class _Actor(Generic[_Item, _Result]):
    """One Ray worker: its state made once from ``start`` in its own process."""

    def __init__(self, start: Start[_Item, _Result]) -> None:
        self._worker: Worker[_Item, _Result] = start()

    def work(self, item: _Item) -> _Result:
        return self._worker.work(item)

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        self._worker.close()


@dataclass
class RayExecutor:
    """``workers`` actors spread over the cluster's nodes, each asking for ``cpus_per_worker`` CPUs and doing
    ``slots_per_worker`` items at once on threads sharing its state (one model, e.g. one llama-server with that
    many slots: with one worker per node, one llama.cpp instance per node)."""

    workers: int = 1
    address: str | None = None
    cpus_per_worker: float = 1.0
    slots_per_worker: int = 1
    #: the actors of the run in progress (tests kill one to see the others finish)
    actors: list[Any] | None = None

    @property
    def describe(self) -> str:
        where = self.address or "a local Ray instance"
        workers = f"{self.workers} worker{'s' if self.workers != 1 else ''}"
        slots = f", {self.slots_per_worker} tasks at once each" if self.slots_per_worker > 1 else ""
        return f"ray ({where}), {workers}, {self.cpus_per_worker:g} CPU each{slots}"

    def run(
        self,
        start: Start[_Item, _Result],
        items: Sequence[_Item],
        done: Done[_Item, _Result],
        stopping: threading.Event,
    ) -> None:
        if not items:
            return
        ray = _ray()
        started_here = not ray.is_initialized()
        if started_here:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        actors: list[Any] = []
        up: list[Any] = []  # the workers that came up, once all items are done
        try:
            cpus = float(ray.cluster_resources().get("CPU", 0))
            if cpus < self.cpus_per_worker:  # no worker could ever be placed: waiting would be forever
                raise ConfigError(
                    f"the Ray cluster has {cpus:g} CPUs, and a worker asks for {self.cpus_per_worker:g}: "
                    "ask for fewer with --cpus-per-worker"
                )
            actor_class = ray.remote(_Actor).options(
                num_cpus=self.cpus_per_worker,
                max_concurrency=self.slots_per_worker,
                scheduling_strategy="SPREAD",  # one per node while there are nodes
                max_restarts=0,
                max_task_retries=0,
            )
            wanted = min(self.workers, -(-len(items) // self.slots_per_worker))
            self.actors = actors = [actor_class.remote(start) for _ in range(wanted)]
            up = self._hand_out(ray, actors, items, done, stopping)
        finally:
            if up:  # done: each worker frees its model (a llama-server child), all at once
                with contextlib.suppress(Exception):
                    ray.get([actor.close.remote() for actor in up], timeout=30)
            for actor in actors:  # Ctrl-C or an error: killed at once, its work in flight dropped
                with contextlib.suppress(Exception):
                    ray.kill(actor)
            self.actors = None
            if started_here:
                ray.shutdown()

    def _hand_out(
        self,
        ray: Any,
        actors: list[Any],
        items: Sequence[_Item],
        done: Done[_Item, _Result],
        stopping: threading.Event,
    ) -> list[Any]:
        """Items to the workers that are up (placed and started: a worker the cluster cannot place yet waits
        for resources and joins when it can), each result to ``done`` as it comes; a worker's death puts its
        items back in the queue. Returns the workers up at the end."""
        from ray.exceptions import RayActorError, RayTaskError

        queue: deque[_Item] = deque(items)
        starting = {actor.pid.remote(): actor for actor in actors}  # answered once the worker is up
        idle: list[Any] = []  # a free slot each
        in_flight: dict[Any, tuple[Any, _Item]] = {}
        deaths: list[str] = []
        up: list[Any] = []

        def died(actor: Any, error: Exception) -> None:
            nonlocal idle
            deaths.append(_cause(error))
            ray.kill(actor)  # unreachable but perhaps alive: it must not finish an item another one redoes
            idle = [a for a in idle if a is not actor]  # its other free slots went with it
            if actor in up:
                up.remove(actor)
            if not idle and not in_flight and not starting:
                raise WorkersLost(
                    f"every Ray worker died ({len(deaths)}); {len(queue)} items not done. First: {deaths[0]}"
                ) from error

        while queue or in_flight:
            while idle and queue and not stopping.is_set():
                actor, item = idle.pop(0), queue.popleft()
                in_flight[actor.work.remote(item)] = (actor, item)
            if not in_flight and (stopping.is_set() or not starting):
                return up  # stopping: the rest is never started
            ready, _ = ray.wait([*in_flight, *starting], num_returns=1, timeout=_WAKE_S)
            for ref in ready:
                if ref in starting:
                    actor = starting.pop(ref)
                    try:
                        ray.get(ref)
                    except RayActorError as e:  # it could not start (its model would not load, ...)
                        died(actor, e)
                        continue
                    idle += [actor] * self.slots_per_worker
                    up.append(actor)
                    continue
                actor, item = in_flight.pop(ref)
                try:
                    result = ray.get(ref)
                except RayActorError as e:  # the worker died with this item: another one does it
                    queue.appendleft(item)
                    died(actor, e)
                    continue
                except RayTaskError as e:  # the work's own error, as the work raised it
                    raise cast(Any, e).as_instanceof_cause() from None
                done(item, result)
                idle.append(actor)
        return up


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_EXCEPTION_LINE = re.compile(r"^[\w.]*(?:Error|Exception|Exit|Interrupt)\b.*", re.M)


def _cause(error: Exception) -> str:
    """What killed a worker, in one line: the exception its own code raised (the last such line of Ray's
    report, which begins with Ray's own words), else Ray's first line."""
    text = _ANSI.sub("", str(error))
    raised = [m.group(0) for m in _EXCEPTION_LINE.finditer(text) if not m.group(0).startswith("ray.")]
    return raised[-1].strip() if raised else (text.strip().splitlines() or [type(error).__name__])[0]
