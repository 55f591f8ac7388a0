"""The run report people look at: one self-contained HTML page per run (and one comparing runs), built from the
run record only."""

from l2mac.visual.page import write_comparison, write_run_report
from l2mac.visual.run_view import RunView, read_run

__all__ = ["RunView", "read_run", "write_comparison", "write_run_report"]
