"""Strategies: how a run turns the task into work for the control unit. ``l2mac`` is the sequential loop of the
paper; ``soa`` is self-organised agents, over the same model access, tools, checks and store.
"""

from __future__ import annotations

from l2mac.control import StepProtocol
from l2mac.errors import ConfigError
from l2mac.settings import RunSettings
from l2mac.strategies.base import RunContext, Strategy, StrategyResult
from l2mac.strategies.sequential import SequentialStrategy
from l2mac.strategies.soa import SoAStrategy

STRATEGIES: dict[str, type[SequentialStrategy] | type[SoAStrategy]] = {"l2mac": SequentialStrategy, "soa": SoAStrategy}


def strategy_for(rs: RunSettings, protocol: StepProtocol) -> Strategy:
    """The strategy ``rs.strategy`` names, with its own settings taken from ``rs``."""
    try:
        kind = STRATEGIES[rs.strategy]
    except KeyError:
        raise ConfigError(f"unknown strategy {rs.strategy!r}; choose one of: {', '.join(STRATEGIES)}") from None
    return kind.from_settings(rs, protocol)


__all__ = [
    "STRATEGIES",
    "RunContext",
    "SequentialStrategy",
    "SoAStrategy",
    "Strategy",
    "StrategyResult",
    "strategy_for",
]
