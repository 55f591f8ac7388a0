"""The tools the model uses on the file store, by name."""

from l2mac.checks.env import ToolEnv
from l2mac.tools.base import Tool, Toolbox, parse_arguments
from l2mac.tools.complete import COMPLETE, STEP_COMPLETE
from l2mac.tools.execution import RUN_PYTHON, RUN_TESTS
from l2mac.tools.files import DELETE_FILES, EDIT_FILE, LIST_FILES, VIEW_FILES, WRITE_FILES

ALL_TOOLS: dict[str, Tool] = {
    t.name: t for t in (LIST_FILES, VIEW_FILES, WRITE_FILES, EDIT_FILE, DELETE_FILES, RUN_PYTHON, RUN_TESTS, COMPLETE)
}


def tools_named(names: list[str]) -> list[Tool]:
    """The tools for ``names``; ``step_complete`` is always included."""
    unknown = [n for n in names if n not in ALL_TOOLS]
    if unknown:
        raise KeyError(f"unknown tools {unknown}; known: {sorted(ALL_TOOLS)}")
    chosen = [ALL_TOOLS[n] for n in names]
    if COMPLETE not in chosen:
        chosen.append(COMPLETE)
    return chosen


__all__ = ["ALL_TOOLS", "STEP_COMPLETE", "Tool", "ToolEnv", "Toolbox", "parse_arguments", "tools_named"]
