"""Choosing an executor from the command line's options."""

from __future__ import annotations

from l2mac.errors import ConfigError
from l2mac.executors.base import Executor

EXECUTORS = ("threads", "ray")


def make_executor(
    kind: str = "threads",
    workers: int = 1,
    *,
    address: str | None = None,
    cpus_per_worker: float = 1.0,
    slots_per_worker: int = 1,
) -> Executor:
    """``threads``: ``workers`` threads in this process sharing one worker state (today's runner); ``ray``:
    ``workers`` Ray actors, each with its own state, ``cpus_per_worker`` CPUs and ``slots_per_worker`` items
    at once, on the cluster at ``address`` (a local instance started and stopped when there is none)."""
    if workers < 1:
        raise ConfigError(f"workers must be at least 1, not {workers}")
    if slots_per_worker < 1:
        raise ConfigError(f"slots per worker must be at least 1, not {slots_per_worker}")
    if address is not None and kind == "threads":
        kind = "ray"  # an address means a cluster
    if kind == "threads":
        from l2mac.executors.threads import ThreadExecutor

        return ThreadExecutor(workers)
    if kind == "ray":
        from l2mac.executors.on_ray import RayExecutor

        return RayExecutor(workers, address=address, cpus_per_worker=cpus_per_worker, slots_per_worker=slots_per_worker)
    raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, not {kind!r}")
