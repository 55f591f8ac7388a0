"""Executors: where independent units of work (a benchmark's tasks, a batch's projects) run.

In this process on threads (the default), or on a Ray cluster (``l2mac[ray]``). The caller gives a picklable
``start`` that makes one worker's state (its model, loaded once and reused across its tasks) and the items;
results come back to the caller's process one by one as they finish, so it saves each at once.
"""

from l2mac.executors.base import Executor, Worker
from l2mac.executors.choose import make_executor

__all__ = ["Executor", "Worker", "make_executor"]
