"""The control unit's text protocol, for small models: files are written as fenced blocks, not tool calls.

A 1.5B model writes far better code in a fenced block under its file name than as a JSON-escaped string in a
tool call (it falls back to placeholders, Python triple quotes and broken escapes there). In this protocol:

- the step's fresh context shows the current files *with their contents* (within a share of the window), so
  the model needs no tool to read them;
- every file the model writes (``path`` line, then a fenced block) is saved, and the checks and tests run at
  once; their result is the next user message;
- the step completes when the model declares it (``STEP COMPLETE``, or an answer with no files once the checks
  pass) *and* the checks pass; otherwise the same budgets as the tool protocol apply and the step is recorded
  as failed.

The loop shares context accounting, restarts, checks and the run record with :class:`ControlUnit`. When the step's
tests fail, :mod:`l2mac.weighing` weighs the code against them by sampling implementations, and
:mod:`l2mac.regressions` puts back earlier steps' files the step broke.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from functools import partial

from pydantic_ai.messages import ModelMessage, ModelRequest, SystemPromptPart, UserPromptPart

from l2mac.checks.output import trim_output
from l2mac.checks.python import is_test_file, module_name
from l2mac.checks.repairs import python_files, repair_written
from l2mac.cli_pattern import cli_pattern_fields
from l2mac.consensus import (
    weighable,
)
from l2mac.context import CHARS_PER_TOKEN
from l2mac.control_unit import ControlUnit, Step, _State
from l2mac.demands import (
    invented_attributes,
    missing_definitions,
    named_files,
    names_for_file,
    stubbed,
    undefined_calls,
    untested_functions,
    untested_modules,
)
from l2mac.errors import WorkspaceError
from l2mac.events import ToolUsed
from l2mac.models.client import ContextOverflow
from l2mac.recovery import fenced_files, json_files, merge_definitions, unnamed_blocks
from l2mac.regressions import Baseline, find_regression
from l2mac.store import FileStore
from l2mac.types import StepOutcome, StepStatus, ToolResult
from l2mac.weighing import Weigher

_DONE = re.compile(r"\bSTEP[ _]COMPLETE\b[:.\s]*", re.IGNORECASE)
# a step that writes a command-line program: the model is shown the shape of one (``text_cli_pattern``); told
# only "argparse with sub-commands", a 1.5B model wrote nested functions calling input() and parse_args()
_CLI = re.compile(r"\bargparse\b|command[- ]line|\bCLI\b|sub-?commands?\b|\bmain\(argv", re.IGNORECASE)
#: share of the prompt budget the step's fresh context may spend on showing file contents
FILES_SHARE = 0.4


class TextControlUnit(ControlUnit):
    protocol = "text"

    def file_contents(self, budget_chars: int, hide: Callable[[str], bool] | None = None) -> str:
        """Each file with its content, smallest contexts first, until ``budget_chars`` is spent; the rest named.
        Files for which ``hide`` is true are left out."""
        store = self.toolbox.env.store
        shown: list[str] = []
        listed: list[str] = []
        used = 0
        for path in store.list_files():
            if hide is not None and hide(path):
                continue
            try:
                text = store.read_text(path)
            except (OSError, UnicodeError, ValueError, WorkspaceError):
                listed.append(path)
                continue
            block = f"{path}\n```{_fence_lang(path)}\n{text.rstrip()}\n```"
            if used + len(block) > budget_chars:
                listed.append(f"{path} ({len(text.splitlines())} lines, not shown)")
                continue
            shown.append(block)
            used += len(block)
        parts = shown + ([("Other files:\n" + "\n".join(f"- {p}" for p in listed))] if listed else [])
        return "\n\n".join(parts) or "(no files yet)"

    def fresh_context(
        self,
        step: Step,
        progress: str = "",
        feedback: str = "",
        focus: str | None = None,
        hide: Callable[[str], bool] | None = None,
    ) -> list[ModelMessage]:
        """The step, the files (but those ``hide`` names), and ``feedback``; the format example shows ``focus``
        (the file asked for), since a small model writes whatever path the example shows."""
        budget_chars = int(self.budget.limit * CHARS_PER_TOKEN * FILES_SHARE)
        prompt = self.domain.render(
            "text_step",
            **self.step_values(step, progress),
            files=self.file_contents(budget_chars, hide),
            request=feedback or self.domain.render("text_request"),
            named_files=", ".join(named_files(step.instruction.instruction)) or "(as the step says)",
        )
        example = self.example_values(step, focus)
        system = self.domain.render("text_step_system", **example, example_lang=_fence_lang(example["example_path"]))
        if "text_cli_pattern" in self.domain.prompts and _CLI.search(step.instruction.instruction):
            fields = cli_pattern_fields(python_files(self.toolbox.env.store), step.instruction.instruction)
            system += "\n\n" + self.domain.render("text_cli_pattern", **fields)
        return [ModelRequest(parts=[SystemPromptPart(system), UserPromptPart(prompt)])]

    def _request_file(self, path: str, to_write: list[str]) -> str:
        """The request for one named file; for a test file, naming the modules it must import, not copy."""
        if is_test_file(path):

            def is_code(p: str) -> bool:
                return p.endswith(".py") and not is_test_file(p) and not p.startswith("tests/")

            code = [p for p in to_write if is_code(p)] or [p for p in self.toolbox.env.store.list_files() if is_code(p)]
            modules = ", ".join(module_name(p) for p in code)
            return self.domain.render("text_request_test_file", path=path, modules=modules or "the project")
        return self.domain.render("text_request_file", path=path)

    def _add_missing_imports(self, step: Step, files: list[dict[str, str]]) -> list[str]:
        """Add the imports the model forgot for names whose module is certain (Path, json, dataclass...), and
        drop its misuse of pytest fixtures."""
        env = self.toolbox.env
        paths = [f["path"] for f in files if f["path"].endswith(".py")]

        def log(recovery: str, **fields: object) -> None:
            self.log("recovered", step=step.index, recovery=recovery, **fields)

        return repair_written(env.store, partial(env.check_files, types=False), paths, log)

    def _resolve_bare_names(self, step: Step, files: list[dict[str, str]], to_write: list[str]) -> list[dict[str, str]]:
        """A bare file name ("test_core.py") that is not a file but the name of exactly one project file (or
        of a file the step must write) means that file ("tests/test_core.py"); so does a path that differs from
        one only in letter case ("Tests/test_core.py")."""
        store = self.toolbox.env.store
        known = list(dict.fromkeys([*store.list_files(), *to_write]))
        out = []
        for f in files:
            path = f["path"]
            if not store.is_project_file(path) and path not in known:
                if "/" in path:
                    same = [k for k in known if k.lower() == path.lower()]
                else:
                    same = [k for k in known if k.rsplit("/", 1)[-1] == path]
                if len(same) == 1:
                    self.log("recovered", step=step.index, recovery="bare_name_resolved", path=same[0])
                    f = {"path": same[0], "content": f["content"]}
            out.append(f)
        return out

    def _place_unnamed_blocks(
        self, step: Step, text: str, files: list[dict[str, str]], requested: str | None
    ) -> list[dict[str, str]]:
        """Writes for code blocks that name no file: the one block of an answer to "write X" is X; a block of
        corrected functions is merged into the one file that defines them all."""
        blocks = unnamed_blocks(text)
        if not blocks:
            return []
        named = {f["path"] for f in files}
        if requested is not None and requested not in named and len(blocks) == 1 and not files:
            self.log("recovered", step=step.index, recovery="unnamed_block_is_the_requested_file", path=requested)
            return [{"path": requested, "content": blocks[0]}]
        out: list[dict[str, str]] = []
        sources = python_files(self.toolbox.env.store)
        for block in blocks:
            merged = {p: m for p, src in sources.items() if p not in named and (m := merge_definitions(src, block))}
            if len(merged) == 1:
                path, content = merged.popitem()
                sources[path] = content
                out = [f for f in out if f["path"] != path] + [{"path": path, "content": content}]
                self.log("recovered", step=step.index, recovery="definitions_merged_into_file", path=path)
        return out

    def _step_checks(self, step: Step) -> tuple[bool, str]:
        """The project's checks, and what the step itself still lacks: its files, the definitions it names, a
        test of each module it writes."""
        store = self.toolbox.env.store
        ok, report = self._run_checks(step)
        missing = [p for p in named_files(step.instruction.instruction) if not store.exists(p)]
        if missing:
            note = self.domain.render("text_missing_files", files=", ".join(missing))
            ok, report = False, f"{note}\n\n{report}".strip()
        absent = missing_definitions(step.instruction.instruction, python_files(store))
        if absent and self.toolbox.env.python_checks:
            note = self.domain.render("text_missing_definitions", names=", ".join(absent))
            ok, report = False, f"{note}\n\n{report}".strip()
        if self.run_tests and step.instruction.requires_tests and self.toolbox.env.python_checks:
            code = [p for p in named_files(step.instruction.instruction) if store.is_project_file(p)]
            if untested := untested_modules(code, python_files(store)):
                note = self.domain.render("text_untested", paths=", ".join(untested))
                ok, report = False, f"{note}\n\n{report}".strip()
            else:
                for path, names in untested_functions(step.instruction.instruction, code, python_files(store)).items():
                    note = self.domain.render("text_untested_functions", path=path, names=", ".join(names))
                    ok, report = False, f"{note}\n\n{report}".strip()
        return ok, report

    async def _undo_regressions(self, step: Step, before: Baseline, report: str, removed: list[str]) -> str | None:
        """Put back the earlier steps' files this step changed when the change broke what worked when the step
        began (see :mod:`l2mac.regressions`). Returns the note for the model, or None when nothing was put back."""
        env = self.toolbox.env
        found = await asyncio.to_thread(find_regression, before, env, self.run_tests, report, removed)
        if found is None:
            return None
        await self.save(step, [{"path": p, "content": before.snapshot[p]} for p in found.undo], "regression undone")
        self.log("recovered", step=step.index, recovery="regression_undone", paths=found.undo, tests=found.broken[:10])
        what = [f"- {t} passed before and now fails" for t in found.broken[:5]] + [
            f"- {p} had no code problems before and now has" for p in found.spoiled
        ]
        return self.domain.render(
            "text_regression_undone",
            paths=", ".join(found.undo),
            what="\n".join(what),
            own=", ".join(named_files(step.instruction.instruction)) or "the files it needs",
        )

    async def save(self, step: Step, files: list[dict[str, str]], why: str = "") -> ToolResult:
        """``write_files``, reported as a tool use and logged (``why`` names a write the model did not ask for)."""
        result = await asyncio.to_thread(self.toolbox.call, "write_files", {"files": files})
        self.emit(ToolUsed(step.index, "write_files", result.ok))
        logged = f"{why}: {', '.join(f['path'] for f in files)}" if why else result.content[:300]
        self.log("tool_call", step=step.index, tool="write_files", ok=result.ok, result=logged)
        return result

    async def run_step(self, step: Step) -> StepOutcome:
        """Every attempt is a fresh context: the step, the files as they are now, and the last attempt's result.

        A small model copies its own earlier answers when they stay in the conversation; showing it the files
        and the failure instead makes it react to the failure, and keeps the context small."""
        store = self.toolbox.env.store
        state = _State(messages=self.fresh_context(step), start_revision=store.revision)
        wrote_any = False
        # the files the step names are asked for one at a time, in order: a small model asked for three
        # files at once mixes them up (e.g. writes the implementation into the test file)
        to_write = [p for p in named_files(step.instruction.instruction) if not store.exists(p)]
        written: set[str] = set()
        feedback = self._request_file(to_write[0], to_write) if to_write else ""
        focus = to_write[0] if to_write else None
        temperature: float | None = None
        lacking: dict[str, set[str]] = {}  # per named file, the functions it still lacked last time
        weighing = Weigher(self, step)  # what agreement learned about this step's tests
        before = Baseline(store.snapshot(), set(named_files(step.instruction.instruction)))
        while True:
            if state.turns >= self.limits.max_turns:
                return await self._fail(step, state, f"turn budget spent ({self.limits.max_turns} model calls)")
            state.messages = self.fresh_context(step, feedback=feedback, focus=focus)
            while not self.budget.fits(state.messages) and len(feedback) > 500:
                feedback = trim_output(feedback, len(feedback) // 2)
                state.messages = self.fresh_context(step, feedback=feedback, focus=focus)
            try:
                response = await self.client.request(
                    state.messages, [], purpose=f"step {step.index}", temperature=temperature
                )
            except ContextOverflow:
                return await self._fail(step, state, "the step's files and feedback do not fit the context")
            state.turns += 1
            state.messages.append(response)
            text = response.text or ""
            files = fenced_files(text) or (json_files(text) if self.recover else [])
            for call in response.tool_calls if self.recover else []:  # a model that calls write_files anyway
                if call.tool_name == "write_files":
                    files += json_files(call.args if isinstance(call.args, str) else json.dumps(call.args or {}))
            declared = bool(_DONE.search(text))
            cut = response.finish_reason == "length" and not text.rstrip().endswith("```")
            if cut and files:  # the last block was cut off mid-file: never save half a file
                self.log("recovered", step=step.index, recovery="cut_off_file_dropped", path=files[-1]["path"])
                files = files[:-1]
            set_aside: list[str] = []
            requested = next((p for p in to_write if p not in written), None)
            if self.recover:
                files = self._resolve_bare_names(step, files, to_write)
                files += self._place_unnamed_blocks(step, text, files, requested)
            if requested is not None and any(f["path"] == requested for f in files):
                # one named file at a time: the others it wrote ahead are asked for next, with this one in view
                files = [
                    f for f in files if f["path"] == requested or f["path"] not in to_write or f["path"] in written
                ]
            elif requested is not None and (set_aside := sorted({f["path"] for f in files} & written)):
                # a file of this step sent again instead of the one asked for: keep the saved one, ask again
                self.log("recovered", step=step.index, recovery="rewrite_set_aside", paths=set_aside)
                files = [f for f in files if f["path"] not in written]
            files, fragments = _split_fragments(store, files)
            if set_aside:
                fragments.append(self.domain.render("text_already_saved", paths=", ".join(set_aside)))
            if cut:
                fragments.append(self.domain.render("text_cut_off"))
            written.update(f["path"] for f in files)
            pending = [p for p in to_write if p not in written]
            unchanged = bool(files) and all(store.has_text(f["path"], f["content"]) for f in files)
            saved = saved_full = "\n".join(fragments)
            if files and not unchanged:
                wrote_any = True
                result = await self.save(step, files)
                saved = result.content.split("\nChecks found problems")[0]
                saved_full = result.content
                if self.recover and (added := await asyncio.to_thread(self._add_missing_imports, step, files)):
                    problems = [str(i) for i in self.toolbox.env.check_files([f["path"] for f in files])]
                    saved = "\n".join([saved, *added])
                    saved_full = "\n".join(
                        [saved, *(["Checks found problems, fix them:", *problems] if problems else [])]
                    )
                saved_full = "\n".join([saved_full, *fragments])
                saved = "\n".join([saved, *fragments])
            elif not files and not declared and not wrote_any and not fragments and not pending:
                feedback = self.domain.render("text_no_files")
                continue
            if pending:  # the step's files are not all written yet: ask for the next one, tests come after
                if requested in pending:  # the file asked for was not written
                    state.check_failures += 1
                    if state.check_failures > self.limits.max_check_failures:
                        return await self._fail(step, state, f"{requested} was never written")
                    temperature = min(1.0, (temperature or 0.2) + 0.3)
                else:
                    temperature = None
                wrote = saved_full if files and not unchanged else saved_full or self.domain.render("text_no_files")
                stubs: dict[str, str] = {}
                if (
                    requested is not None
                    and requested not in pending
                    and requested.endswith(".py")
                    and not (is_test_file(requested))
                ):
                    absent = missing_definitions(step.instruction.instruction, {requested: store.read_text(requested)})
                    owned = [n for n in absent if n in names_for_file(step.instruction.instruction, requested)]
                    if owned:  # the file just written lacks what the step asks of it: ask for it again
                        written.discard(requested)
                        pending = [requested, *[p for p in pending if p != requested]]
                        if not set(owned) < lacking.get(requested, set()):  # no stub completed since last time
                            state.check_failures += 1
                        lacking[requested] = set(owned)
                        if state.check_failures > self.limits.max_check_failures:
                            return await self._fail(step, state, f"{requested} never defined {', '.join(owned)}")
                        wrote += "\n" + self.domain.render("text_missing_definitions", names=", ".join(owned))
                        # a stub is asked for alone: a small model sent the whole file back copies it unchanged
                        stubs = stubbed(owned, {requested: store.read_text(requested)})
                request = (
                    self.domain.render("text_complete_one_stub", path=requested, stub=stubs[requested])
                    if requested is not None and requested in stubs
                    else self._request_file(pending[0], to_write)
                )
                feedback = self.domain.render("text_next_file", saved=wrote, request=request)
                if unchanged:  # the same file again while it is still asked for: say so, sample more freely
                    feedback = self.domain.render("text_unchanged") + "\n\n" + feedback
                    temperature = min(1.0, (temperature or 0.2) + 0.3)
                focus = pending[0]
                continue
            ok, report = await asyncio.to_thread(self._step_checks, step)
            undone = await self._undo_regressions(step, before, report, state.tests_removed) if not ok else None
            if undone is not None:
                ok, report = await asyncio.to_thread(self._step_checks, step)
            absent = missing_definitions(step.instruction.instruction, python_files(store))
            self.log("checks", step=step.index, ok=ok, report=report[:2000])
            agreed = None
            if not ok and weighable(report, named_files(step.instruction.instruction)):
                agreed = await weighing.seek(report)
                state.tests_removed += agreed.removed if agreed is not None else []
                if agreed is not None and agreed.changed:  # a file was changed: check again
                    ok, report = await asyncio.to_thread(self._run_checks, step)
                    self.log("checks", step=step.index, ok=ok, report=report[:2000])
            if ok and (declared or not files or unchanged):
                return self._outcome(step, state, StepStatus.PASSED, _summary(text, step, self))
            if ok:
                feedback = self.domain.render("text_checks_passed", saved=saved)
            else:
                state.check_failures += 1
                if state.check_failures > self.limits.max_check_failures:
                    return await self._fail(step, state, f"checks still failing after {state.check_failures} attempts")
                first = _FIRST_PROBLEM.search(report)
                focus = first.group(1) if first and store.is_project_file(first.group(1)) else None
                feedback = self.domain.render(
                    "text_checks_failed",
                    first_file=first.group(1) if first else "the file the first error names",
                    attempt=state.check_failures,
                    max_attempts=self.limits.max_check_failures + 1,
                    report=report,
                    saved=saved or "(no file was changed)",
                )
                sources = python_files(store)
                for path, stub in stubbed(absent, sources).items():  # the model echoed a signature and docstring
                    feedback += "\n\n" + self.domain.render("text_complete_stub", path=path, stub=stub)
                    focus = path
                if invented := invented_attributes(report, step.instruction.instruction, sources):
                    feedback += "\n\n" + self.domain.render("text_invented_api", names=", ".join(invented))
                for path, names in undefined_calls(report, sources).items():
                    feedback += "\n\n" + self.domain.render("text_define_missing", path=path, names=", ".join(names))
            if agreed is not None:
                feedback += "\n\n" + agreed.note
                if not ok and agreed.focus:
                    focus = agreed.focus
            if undone is not None:
                feedback = undone + "\n\n" + feedback
            if unchanged:  # the same answer again: say so, and sample more freely next time
                feedback = self.domain.render("text_unchanged") + "\n\n" + feedback
                temperature = min(1.0, (temperature or 0.2) + 0.3)
            else:
                temperature = None


#: a block with fewer than this share of an existing file's lines (of at least FRAGMENT_MIN_LINES) is a fragment
FRAGMENT_SHARE = 0.5
FRAGMENT_MIN_LINES = 12


def _split_fragments(store: FileStore, files: list[dict[str, str]]) -> tuple[list[dict[str, str]], list[str]]:
    """Whole files to write, and a note for each block that looks like a fragment of an existing file.

    Small models often answer with the few lines they changed under the file's name; writing that would
    destroy the rest of the file, so it is refused and the model is asked for the whole file."""
    whole: list[dict[str, str]] = []
    notes: list[str] = []
    for f in files:
        try:
            old = len(store.read_text(f["path"]).splitlines())
        except (OSError, UnicodeError, ValueError, WorkspaceError):
            old = 0
        new = len(f["content"].splitlines())
        if old >= FRAGMENT_MIN_LINES and new < old * FRAGMENT_SHARE:
            merged = merge_definitions(store.read_text(f["path"]), f["content"]) if f["path"].endswith(".py") else None
            if merged is not None:  # only functions or classes the file defines: put in place of theirs
                whole.append({"path": f["path"], "content": merged})
                notes.append(f"Your definitions were put in place of those of the same name in {f['path']}.")
                continue
            notes.append(
                f"Not saved: {f['path']}: your block has {new} lines but the file has {old}; it looks like a "
                "fragment. Write the COMPLETE file."
            )
        else:
            whole.append(f)
    return whole, notes


_FIRST_PROBLEM = re.compile(r"^([\w./-]+\.py):\d+", re.MULTILINE)


def _fence_lang(path: str) -> str:
    return {"py": "python", "md": "markdown", "json": "json", "toml": "toml", "yaml": "yaml", "yml": "yaml"}.get(
        path.rsplit(".", 1)[-1], ""
    )


def _summary(text: str, step: Step, unit: TextControlUnit) -> str:
    """The model's own words after STEP COMPLETE (or its prose), else the files the step changed."""
    found = _DONE.search(text)
    prose = text[found.end() :] if found else re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    prose = prose.strip()
    if prose:
        return prose[:1500]
    changed = unit.toolbox.env.store.list_files()
    return f"Step {step.index} ({step.instruction.title}) is done. Files now: {', '.join(changed[:40])}."
