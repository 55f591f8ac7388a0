"""What a text-protocol step is shown: a fresh context built from the step, the project's files and the ranges
read (see :mod:`l2mac.control.text`).

The files come with their contents within a share of the window, the most relevant first when they do not all
fit; the rest are named, and a ``READ path:START-END`` line shows any of them. A long module the step does not
mention is shown as its numbered outline: a small model shown one whole sends it back whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from functools import partial

from pydantic_ai.messages import ModelMessage, ModelRequest, SystemPromptPart, UserPromptPart

from l2mac.checks.demands import example_values, mentioned_files, named_files
from l2mac.context import CHARS_PER_TOKEN
from l2mac.control.answers import LONG_FILE_LINES, long_files
from l2mac.control.protocol import Setting
from l2mac.control.step import Step
from l2mac.domains import Domain
from l2mac.fenced import fence_lang, show_files
from l2mac.repo.map import numbered_outline, rank, sources_named

#: a file :func:`l2mac.fenced.show_files` names without its content
_NOT_SHOWN = re.compile(r"^- (\S+) \(\d+ lines, not shown\)$", re.MULTILINE)
#: share of the prompt budget the context may spend on showing file contents
FILES_SHARE = 0.4
#: definitions a long module's outline shows, at most
MAX_OUTLINE = 80


def text_messages(
    setting: Setting,
    step: Step,
    request: str,
    *,
    focus: str | None = None,
    hide: Callable[[str], bool] | None = None,
    progress: str = "",
    reads: tuple[str, ...] = (),
    whole: Collection[str] = (),
    shown_as: Mapping[str, str] | None = None,
) -> list[ModelMessage]:
    """A fresh context: the step, the files (but those ``hide`` names) and the ranges read, and ``request``; the
    format example shows ``focus`` (the file asked for), since a small model writes whatever path it shows. A long
    module is shown as its outline (see :func:`_outlined`) unless it is ``focus`` or ``whole`` (what the step
    wrote) has it."""
    domain = setting.domain
    budget_chars = int(setting.budget.limit * CHARS_PER_TOKEN * FILES_SHARE)
    instruction = step.instruction.instruction
    files = show_files(
        setting.toolbox.env.store,
        budget_chars,
        hide,
        partial(rank, request=instruction),
        partial(_outlined, domain, instruction, {*([focus] if focus else []), *whole}),
        shown_as,
    )
    hidden = _NOT_SHOWN.search(files)
    if hidden and "text_read_hint" in domain.prompts:  # said only when it is of use, with a file it is of use for
        files += "\n" + domain.render("text_read_hint", path=hidden.group(1))
    if reads:
        files += "\n\nWhat you asked to read:\n" + "\n\n".join(reads)
    prompt = domain.render(
        "text_step",
        **step.values(domain.render("progress", summary=progress) if progress else "", domain.render("whole_task")),
        files=files,
        request=request or domain.render("text_request"),
        named_files=", ".join(named_files(instruction)) or "(as the step says)",
    )
    example = example_values(instruction, domain.name, focus)
    long = long_files(setting.toolbox.env.store)
    rule = (
        domain.render("text_long_files", paths=", ".join(long)) if long and "text_long_files" in domain.prompts else ""
    )
    system = domain.render(
        "text_step_system", **example, example_lang=fence_lang(example["example_path"]), long_files=rule
    )
    return [ModelRequest(parts=[SystemPromptPart(system), UserPromptPart(prompt)])]


def _outlined(domain: Domain, instruction: str, whole: set[str], path: str, text: str) -> str | None:
    """A long Python module, as its numbered outline, and when the step mentions it, the source of the
    definitions the step names. Shown one whole, a small model sends it back whole, for minutes, to add one
    function, even when the step says which file to change (inflection, issue 23); it needs the module's names,
    where each begins (for a ranged read), and the code it changes."""
    if path in whole or not path.endswith(".py") or "text_long_file" not in domain.prompts:
        return None
    lines = len(text.splitlines())  # as split_fragments counts
    rows = numbered_outline(text, docs=True)
    if lines < LONG_FILE_LINES or not rows:
        return None
    first = rows[0][0]
    head = domain.render("text_long_file", path=path, lines=lines, first=first, last=min(first + 40, lines))
    shown = head + "\n" + "\n".join(f"{n:>5}| {_entry(line)}" for n, line in rows[:MAX_OUTLINE])
    named = sources_named(text, instruction) if path in mentioned_files(instruction) else []
    if named and "text_long_file_named" in domain.prompts:
        code = "\n\n\n".join(named)
        shown += "\n" + domain.render("text_long_file_named", path=path) + f"\n```python\n{code.rstrip()}\n```"
    return shown


def _entry(line: str) -> str:
    """An outline line as a table of contents shows it, not as code (a small model copies code it is shown
    back into the file, with ``pass`` for bodies): ``camelize(string) -> str: Convert strings to CamelCase.``"""
    line = re.sub(r"^(\s*)(?:async )?def ", r"\1", line)
    return line.replace("  # ", ": ", 1)
