"""Strategies: how a run turns the task into work for the control unit. ``l2mac`` is the sequential loop of the
paper; self-organised agents (``soa``) will be a second strategy over the same model access, tools and store.
"""

from __future__ import annotations

from l2mac.errors import ConfigError
from l2mac.strategies.base import RunContext, Strategy
from l2mac.strategies.sequential import SequentialStrategy

STRATEGIES: dict[str, type[SequentialStrategy]] = {"l2mac": SequentialStrategy}


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGIES)}") from None


__all__ = ["STRATEGIES", "RunContext", "Strategy", "get_strategy"]
