"""The report's pictures, drawn with matplotlib as inline SVG: the file-access heatmap (files × write steps, as
in the L2MAC paper), the run's timeline, and the tests after each step."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from l2mac.visual.run_view import ACCESS_ORDER, RunView

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: heatmap colours per access, and the timeline's per kind of span
ACCESS_COLOURS = {"read": "#9ecae1", "deleted": "#bdbdbd", "written": "#fd8d3c", "created": "#31a354"}
SPAN_COLOURS = {"step": "#e0e0e0", "agent": "#e0e0e0", "prompt": "#bcbddc", "model": "#6a51a3", "checks": "#fd8d3c"}
_SPAN_NAMES = {"prompt": "model reads its prompt", "model": "model generates", "checks": "checks and tests"}
#: every chart's legend: beside it, on the right, never over the data
_BESIDE: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.01, 1), "fontsize": 8, "frameon": False}
_MAX_ROWS = 60  # files shown in the heatmap; the rest are counted under it


@contextmanager
def _figure(width: float, height: float) -> Iterator[Figure]:
    from matplotlib.figure import Figure  # imported when a page is drawn: a run that writes none never pays for it

    yield Figure(figsize=(width, height), layout="constrained")


def _svg(fig: Figure) -> str:
    from matplotlib import rc_context

    buffer = io.StringIO()
    # text as text (searchable, selectable, smaller); a fixed salt for ids: the same run draws the same page
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "l2mac"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def heatmap(view: RunView) -> str:
    """Files (rows) by write steps or agents (columns): the strongest access of each cell. Empty: no accesses."""
    everything, columns = view.accessed_files, view.columns
    files = everything[:_MAX_ROWS]
    if not files or not columns:
        return ""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    colours = ["#ffffff", *(ACCESS_COLOURS[a] for a in ACCESS_ORDER)]
    grid = [
        [1 + ACCESS_ORDER.index(view.access[(f, c)]) if (f, c) in view.access else 0 for c in columns] for f in files
    ]
    with _figure(min(3 + 0.45 * len(columns), 16), 1.6 + 0.28 * len(files)) as fig:
        ax = fig.subplots()
        ax.imshow(grid, cmap=ListedColormap(colours), vmin=0, vmax=len(colours) - 1, aspect="auto")
        ax.set_xticks(range(len(columns)), [c.split()[-1] for c in columns])
        ax.set_yticks(range(len(files)), files, fontsize=8, parse_math=False)  # a path may hold a $
        more = f" ({len(everything) - len(files)} more files not shown)" if len(everything) > len(files) else ""
        ax.set_xlabel(("agent" if columns[0].startswith("agent") else "write step") + more)
        ax.set_xticks([x - 0.5 for x in range(1, len(columns))], minor=True)
        ax.set_yticks([y - 0.5 for y in range(1, len(files))], minor=True)
        ax.grid(which="minor", color="#f0f0f0", linewidth=0.8)
        ax.tick_params(which="minor", length=0)
        ax.legend(handles=[Patch(color=ACCESS_COLOURS[a], label=a) for a in reversed(ACCESS_ORDER)], **_BESIDE)
        return _svg(fig)


def timeline(view: RunView) -> str:
    """Steps (or agents) as bars over the run's time, the model calls and check runs inside them."""
    bars = [s for s in view.spans if s.kind in ("step", "agent")]
    lanes = list(dict.fromkeys(["plan"] * any(s.lane == "plan" for s in view.spans) + [s.lane for s in bars]))
    if not lanes:
        return ""
    from matplotlib.patches import Patch

    row = {lane: i for i, lane in enumerate(lanes)}
    with _figure(11, 1.4 + 0.32 * len(lanes)) as fig:
        ax = fig.subplots()
        for s in view.spans:
            if s.lane not in row:
                continue
            wide = s.kind in ("step", "agent")
            height, y = (0.8, row[s.lane]) if wide else (0.5, row[s.lane])
            ax.barh(y, max(s.end - s.start, 0.05), left=s.start, height=height, color=SPAN_COLOURS[s.kind])
        ax.set_yticks(range(len(lanes)), lanes, fontsize=8, parse_math=False)
        ax.invert_yaxis()
        ax.set_xlabel("seconds from the start of the run")
        ax.legend(handles=[Patch(color=SPAN_COLOURS[k], label=name) for k, name in _SPAN_NAMES.items()], **_BESIDE)
        return _svg(fig)


def tests_over_time(view: RunView) -> str:
    """Tests passing and failing when each step's (or agent's) checks last ran."""
    last = {t.column: t for t in view.tests}
    if not any(t.passed or t.failing for t in last.values()):  # none ran (a book, or no tests yet)
        return ""
    columns = [c for c in view.columns if c in last] or list(last)
    from matplotlib.ticker import MaxNLocator

    with _figure(min(3 + 0.45 * len(columns), 11), 2.6) as fig:
        ax = fig.subplots()
        xs = range(len(columns))
        passed = [last[c].passed for c in columns]
        ax.bar(xs, passed, color="#31a354", label="passed")
        ax.bar(xs, [last[c].failing for c in columns], bottom=passed, color="#de2d26", label="failing")
        ax.set_xticks(list(xs), [c.split()[-1] for c in columns])
        ax.set_xlabel(columns[0].split()[0])
        ax.set_ylabel("tests")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(**_BESIDE)
        return _svg(fig)
