"""The agents of an organisation: who owns what, in which state, within which limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from l2mac.soa.contracts import Contract


class AgentState(str, Enum):
    WAITING = "waiting"
    WRITING = "writing"
    TESTING = "testing"
    DONE = "done"
    FAILED = "failed"


@dataclass
class Agent:
    id: int
    owns: str  # "module app/core.py" or "app/core.py:function"
    depth: int
    parent: int | None
    contract: Contract | None = None
    state: AgentState = AgentState.WAITING
    tokens: int = 0
    calls: int = 0
    children: list[int] = field(default_factory=list)
    note: str = ""


@dataclass(frozen=True)
class AgentLimits:
    max_agents: int = 50
    max_depth: int = 3
    concurrency: int = 4
    repair_rounds: int = 2
    attempts: int = 3  # answers an agent may give before it fails
