"""Strategies: how a run turns the task into work for the control unit. ``l2mac`` is the sequential loop of the
paper; ``soa`` is self-organised agents, over the same model access, tools, checks and store.
"""

from __future__ import annotations

from l2mac.errors import ConfigError
from l2mac.strategies.base import RunContext, Strategy
from l2mac.strategies.sequential import SequentialStrategy
from l2mac.strategies.soa import SoAStrategy

STRATEGIES: dict[str, type[SequentialStrategy] | type[SoAStrategy]] = {"l2mac": SequentialStrategy, "soa": SoAStrategy}


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]()
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGIES)}") from None


__all__ = ["STRATEGIES", "RunContext", "Strategy", "get_strategy"]
