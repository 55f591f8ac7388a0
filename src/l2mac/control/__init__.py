"""The control unit (the paper's CPU and its control logic): one loop for every step, in fresh contexts, with
the protocol by which the model answers as its seam."""

from l2mac.control.protocol import StepProtocol
from l2mac.control.step import Step, StepLimits, time_share
from l2mac.control.text import TEXT
from l2mac.control.tool_calls import TOOL_CALLS
from l2mac.control.unit import ControlUnit
from l2mac.errors import ConfigError

PROTOCOLS: dict[str, StepProtocol] = {p.name: p for p in (TOOL_CALLS, TEXT)}


def protocol_named(name: str) -> StepProtocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ConfigError(f"unknown protocol {name!r}; choose one of: {', '.join(PROTOCOLS)}, auto") from None


__all__ = ["PROTOCOLS", "ControlUnit", "Step", "StepLimits", "StepProtocol", "protocol_named", "time_share"]
