"""The text protocol, for small models: files are written as fenced blocks, not tool calls.

A 1.5B model writes far better code in a fenced block under its file name than as a JSON-escaped string in a
tool call. In this protocol:

- every context is built afresh (:mod:`l2mac.control.text_context`): the step, the files *with their contents*
  (within a share of the window; the rest are named, and a ``READ path:START-END`` line shows any of them, or any
  range, in the next context), the ranges read so far, and the last attempt's result. A small model copies its
  own earlier answers when they stay in the conversation; shown the files and the failure instead, it reacts
  to the failure;
- the files the step names are asked for one at a time, in order (asked for three at once, a small model mixes
  them up), and a named file that lacks a function the step gives it is asked for again, one stub at a time
  (what is asked, and where the answer is begun for the model: :mod:`l2mac.control.text_requests`);
- after each answer that completes the step's files, the checks and tests run, and their result is the next
  context's request; the step is declared done with ``STEP COMPLETE`` (or an answer with no new files once the
  checks pass);
- an answer repeated unchanged is said so, and the next one is sampled more freely.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.tools import ToolDefinition

from l2mac.checks.demands import missing_definitions, named_files, names_for_file, problem_lines, stubbed
from l2mac.checks.examples import run_examples
from l2mac.checks.layout import is_test_file
from l2mac.checks.output import trim_output
from l2mac.checks.python import find_code_issues
from l2mac.checks.verdict import Verdict
from l2mac.control.answers import (
    File,
    one_at_a_time,
    place_unnamed_blocks,
    resolve_bare_names,
    salvage_cut_file,
    split_fragments,
)
from l2mac.control.arguments import json_files
from l2mac.control.continuation import Opening, find_function, without_body
from l2mac.control.protocol import Done, Setting, Turn, Verify, cut_off
from l2mac.control.step import Step
from l2mac.control.text_context import text_messages
from l2mac.control.text_requests import Requests
from l2mac.fenced import fenced_blocks, fenced_files
from l2mac.store import scratch_copy
from l2mac.tools import STEP_COMPLETE, Tool
from l2mac.types import ToolResult

_DONE = re.compile(r"\bSTEP[ _]COMPLETE\b[:.\s]*", re.IGNORECASE)
#: a ranged read: ``READ path``, ``READ path:40`` or ``READ path:40-80`` on a line of its own
_READ = re.compile(r"^\s*READ:?\s+`?([\w./-]+?)`?(?::(\d+)(?:\s*-\s*(\d+))?)?\s*$", re.MULTILINE)
#: how much hotter the next answer is sampled after one that changed nothing
TEMPERATURE_STEP = 0.3


def hotter(temperature: float | None) -> float:
    """The temperature to sample the next answer at, after one that changed nothing or could not be used: a
    step above ``temperature`` (above 0.2 from the model's own), at most 1."""
    return min(1.0, (temperature or 0.2) + TEMPERATURE_STEP)


@dataclass
class _Reading:
    """What one answer held, as read: kept for :meth:`TextConversation.feed`."""

    text: str = ""
    files: list[File] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    requested: str | None = None
    pending: list[str] = field(default_factory=list)
    unchanged: bool = False
    nudge: bool = False  # nothing to act on: ask for the files
    only_reads: bool = False


@dataclass
class TextConversation:
    step: Step
    setting: Setting
    tools: list[ToolDefinition] = field(default_factory=list)  # none: the answer is read as text
    temperature: float | None = None
    feedback: str = ""
    focus: str | None = None
    progress: str = ""
    reads: list[str] = field(default_factory=list)  # ranges read since the context last restarted
    to_write: list[str] = field(default_factory=list)  # the named files that did not exist when the step began
    written: set[str] = field(default_factory=set)
    lacking: dict[str, set[str]] = field(default_factory=dict)  # per named file, the functions it lacked last time
    wrote_any: bool = False
    #: per file the model's last answer wrote, what it sent and what the file held once written and repaired
    sent: dict[str, tuple[str, str]] = field(default_factory=dict)
    sending: dict[str, str] = field(default_factory=dict)  # the files of the answer being acted on
    sent_at: int = 0  # the store's revision when that answer was read
    last: _Reading = field(default_factory=_Reading)
    asks: Requests = field(init=False)  # what the next answer is asked for, and where it is begun
    verify: Verify | None = None  # what the next answer is held to before it is read

    @property
    def given(self) -> dict[str, str]:
        """The stubs after the one the next answer is begun inside, given where the model would copy them."""
        opening = self.asks.opening
        return opening.given() if opening is not None else {}

    def __post_init__(self) -> None:
        store = self.setting.toolbox.env.store
        self.asks = Requests(self.step, self.setting)
        self.to_write = [p for p in named_files(self.step.instruction.instruction) if not store.exists(p)]
        # the code first: a new code file, else one it writes that holds a stub the step gives it (or a new
        # function it asks for, see Requests.begin), else a new test file
        code = [p for p in self.to_write if not is_test_file(p)]
        first = next(iter(code), None) or next(filter(self.asks.begin, self.asks.code_files()), None)
        first = first or next(iter(self.to_write), None)
        if first is not None:
            self.feedback, self.focus = self.asks.file(first, self.to_write), first

    # -- the context -------------------------------------------------------------------------------------
    def messages(self) -> list[ModelMessage]:
        feedback, opening = self.feedback, self.asks.opening
        while True:
            messages = text_messages(
                self.setting,
                self._shown_step(),
                feedback,
                focus=self.focus,
                progress=self.progress,
                reads=tuple(self.reads),
                whole=self.written,
                shown_as={opening.path: opening.elided()} if opening and opening.rewrite else None,
            )
            if opening or self.asks.start:
                messages.append(opening.begun() if opening else ModelResponse(parts=[TextPart(self.asks.start)]))
            if self.setting.budget.fits(messages) or len(feedback) <= 500:
                return messages
            feedback = trim_output(feedback, len(feedback) // 2)

    def _shown_step(self) -> Step:
        """The step as its next context shows it: rewriting a failing function, without the body the step
        gives that function (see :func:`without_body`)."""
        opening = self.asks.opening
        if opening is None or not opening.rewrite:
            return self.step
        shown = without_body(self.step.instruction.instruction, opening.name, opening.owner)
        return replace(self.step, instruction=self.step.instruction.model_copy(update={"instruction": shown}))

    def restart(self, progress: str) -> None:
        self.progress, self.reads = progress, []

    # -- reading an answer -------------------------------------------------------------------------------
    def read(self, response: ModelResponse) -> Turn:
        log, store = self.setting.log, self.setting.toolbox.env.store
        begun = self.asks.answered(response.text or "", cut_off(response))
        text, opening, completed = begun.text, begun.opening, begun.completed
        if opening is not None:
            log("continued", path=opening.path, name=opening.name, body=completed is not None)
            if completed is None and not opening.rewrite and not _READ.search(text):
                self.asks.held_no_body(opening)
        # a body that ended before the cut is whole: what the model went on to write is what was cut
        cut = cut_off(response) and not text.rstrip().endswith("```") and not (completed and completed.ended)
        inside = cut and text.count("```") % 2 == 1  # the answer ends inside a file's block: that file was cut
        if opening and completed:
            files = [{"path": opening.path, "content": completed.text}]
            if opening.used_by and store.exists(opening.used_by):  # written again, so its imports are repaired
                files.append({"path": opening.used_by, "content": store.read_text(opening.used_by)})
        elif opening and opening.rewrite:  # read as the whole file, what is after the function would be lost
            files = []
            log("recovered", recovery="rewrite_without_a_body_dropped", path=opening.path, name=opening.name)
        else:  # a block the cut left open is closed, to be read as the file it began
            files = self._files(response, text + ("\n```" if inside else ""))
        cut_path, salvaged = (files[-1]["path"], self._salvage(files)) if inside and files else ("", [])
        requested = next((p for p in self.to_write if p not in self.written), None)
        if self.setting.recover:
            files = resolve_bare_names(store, files, self.to_write, log)
            files += place_unnamed_blocks(store, text, files, requested, log)
        files, set_aside = one_at_a_time(files, requested, self.to_write, self.written, log)
        files, notes = split_fragments(store, files)
        render = self.setting.domain.render
        notes += [render("text_already_saved", paths=", ".join(set_aside))] if set_aside else []
        if cut:
            kept = ", ".join(salvaged)
            notes.append(render("text_cut_off_kept", path=cut_path, names=kept) if kept else render("text_cut_off"))
        self.written.update(f["path"] for f in files if f["path"] != cut_path)  # a cut file is asked for again
        declared = bool(_DONE.search(text))
        reads = [_view_call(m) for m in _READ.finditer(text)]
        last = self.last = _Reading(text, files, notes, requested, [p for p in self.to_write if p not in self.written])
        last.unchanged = bool(files) and all(self._as_before(f["path"], f["content"]) for f in files)
        self.sending, self.sent_at = {f["path"]: f["content"] for f in files}, store.revision
        calls = [*([_call("write_files", {"files": files})] if files and not last.unchanged else []), *reads]
        last.nudge = not (files or declared or self.wrote_any or notes or last.pending or reads)
        last.only_reads = bool(reads) and not files and not declared
        if last.only_reads:  # the same request comes again, with what was read in view: begun as it was
            self.asks.again(begun)
        self.wrote_any = self.wrote_any or bool(files and not last.unchanged)
        if last.nudge or last.pending or last.only_reads:
            return Turn(calls)
        if declared or not files or last.unchanged:
            calls.append(_call(STEP_COMPLETE, {"summary": _summary(text, self.step, store.list_files())}))
        return Turn(calls, check=True)

    def _salvage(self, files: list[File]) -> list[str]:
        """The last of ``files`` was cut off mid-file: never save half a file. Its complete top-level statements
        are kept, with the rest of the file as it was (a Python file, when recoveries are on), else it is dropped
        (``files`` changed in place); returns the definitions kept."""
        store, log = self.setting.toolbox.env.store, self.setting.log
        path = files[-1]["path"]
        kept = None
        if path.endswith(".py") and self.setting.recover:
            kept = salvage_cut_file(store.read_text(path) if store.exists(path) else None, files[-1]["content"])
        if kept is None:
            log("recovered", recovery="cut_off_file_dropped", path=path)
            files.pop()
            return []
        files[-1] = {"path": path, "content": kept[0]}
        log("recovered", recovery="cut_off_file_salvaged", path=path, kept=kept[1])
        return kept[1]

    def _files(self, response: ModelResponse, text: str) -> list[File]:
        files = fenced_files(text) or (json_files(text) if self.setting.recover else [])
        for call in response.tool_calls if self.setting.recover else []:  # a model that calls write_files anyway
            if call.tool_name == "write_files":
                files += json_files(call.args if isinstance(call.args, str) else json.dumps(call.args or {}))
        return files

    def _as_before(self, path: str, content: str) -> bool:
        """Whether writing ``content`` to ``path`` changes nothing: the file holds it, or the model sent it last
        time and the file still holds what that write (and its repairs) made of it."""
        store = self.setting.toolbox.env.store
        if store.has_text(path, content):
            return True
        sent = self.sent.get(path)
        return sent is not None and sent[0] == content and store.has_text(path, sent[1])

    # -- answering it ------------------------------------------------------------------------------------
    def feed(self, done: Done) -> str | None:
        self.verify = None
        last, render = self.last, self.setting.domain.render
        store = self.setting.toolbox.env.store
        written = set(store.changed_since(self.sent_at))  # a file whose write failed is not remembered as sent
        self.sent.update({p: (c, store.read_text(p)) for p, c in self.sending.items() if p in written})
        self.sending = {}
        self.reads += [r.content for c, r in done.results if c.tool_name == "view_files"]
        if last.nudge:
            self.feedback = render("text_no_files")
            return None
        if last.only_reads:  # the same request again, with what was read in view
            return None
        saved_full = "\n".join([*(_written(done.results)), *last.notes])
        saved = "\n".join([*(r.split("\nChecks found problems")[0] for r in _written(done.results)), *last.notes])
        if last.pending:
            return self._next_file(saved_full)
        verdict = done.verdict
        assert verdict is not None
        if verdict.ok:
            feedback = render("text_checks_passed", saved=saved)
        else:
            self.focus = verdict.focus
            feedback = render(
                "text_checks_failed",
                first_file=verdict.first_file or "the file the first error names",
                attempt=done.attempt,
                max_attempts=done.max_attempts,
                report=verdict.report,
                saved=saved or "(no file was changed)",
            )
        feedback = "\n\n".join([verdict.restored, feedback, *verdict.notes]).strip()
        if not verdict.ok:  # a function the step gives a file is still a stub: its body is asked for first
            stubbed_file = next(filter(self.asks.begin, self.asks.code_files()), None)
            if stubbed_file is not None:
                self.focus = stubbed_file
                feedback += "\n\n" + self.asks.file(stubbed_file, self.to_write)
            elif (imported := self.asks.imported_stub(verdict, self.written)) is not None:
                self.asks.opening, self.focus = imported, imported.path
                feedback += "\n\n" + render(
                    "text_request_imported", path=imported.path, name=imported.name, user=imported.used_by
                )
            elif (rewrite := self.asks.failing_function(verdict, self.written)) is not None:
                self.asks.opening, self.focus = rewrite, rewrite.path
                self.verify = self._holds(rewrite, verdict)
                asked = "text_request_return" if rewrite.ends else "text_request_rewrite"
                feedback += "\n\n" + render(asked, path=rewrite.path, name=rewrite.name)
            elif begun := self.asks.fix(self.focus or verdict.first_file):
                feedback += "\n\n" + begun
        self.feedback = self._unchanged(feedback)
        return None

    def _next_file(self, saved: str) -> str | None:
        """The step's files are not all written yet: ask for the next one (tests come after the code). Returns
        why this answer counts as a failed attempt, if it does."""
        last, render, store = self.last, self.setting.domain.render, self.setting.toolbox.env.store
        requested, pending, missed = last.requested, list(last.pending), None
        if requested in pending:  # the file asked for was not written
            missed = f"{requested} was never written"
        wrote = saved if last.files and not last.unchanged else saved or render("text_no_files")
        stubs: dict[str, str] = {}
        instruction = self.step.instruction.instruction
        if (
            requested is not None
            and requested not in pending
            and requested.endswith(".py")
            and not is_test_file(requested)
        ):
            source = {requested: store.read_text(requested)}
            owned = [n for n in missing_definitions(instruction, source) if n in names_for_file(instruction, requested)]
            if owned:  # the file just written lacks what the step asks of it: ask for it again
                self.written.discard(requested)
                pending = [requested, *[p for p in pending if p != requested]]
                if not set(owned) < self.lacking.get(requested, set()):  # no stub completed since last time
                    missed = f"{requested} never defined {', '.join(owned)}"
                self.lacking[requested] = set(owned)
                wrote += "\n" + render("text_missing_definitions", names=", ".join(owned))
                # a stub is asked for alone: a small model sent the whole file back copies it unchanged
                stubs = stubbed(owned, source)
        if requested is not None and requested in stubs and not self.setting.continues:
            request = render("text_complete_one_stub", path=requested, stub=stubs[requested])
        else:
            request = self.asks.file(pending[0], self.to_write)
        self.feedback = self._unchanged(
            render("text_next_file", saved=wrote, request=request), requested in last.pending
        )
        self.focus = pending[0]
        return missed

    def _holds(self, opening: Opening, verdict: Verdict) -> Verify | None:
        """What an answer rewriting the function ``opening`` is begun inside is held to, run in a scratch copy of
        the project: the task's own examples of that function, when they fail; no code problem inside it, when
        the report names one there. Seen at 5d50fc8: on ClassEval_1, shown ``Expected: 50.26548245743669, Got:
        100.53096491487338``, the 1.5B model wrote the same wrong formula for a sphere's area twice; at 5e787ae,
        on ClassEval_8, told deposit() returns nothing, it sent the same body twice."""
        name = f"{opening.owner}.{opening.name}" if opening.owner else opening.name
        examples = [e for e in verdict.failing_examples if e.name == name]
        env = self.setting.toolbox.env
        store = env.store
        flagged = problem_lines(verdict.report, opening.path) & _lines_of(store.read_text(opening.path), opening)
        if not examples and not flagged:
            return None

        def holds(response: ModelResponse) -> bool:
            completed = opening.completion(response.text or "")
            if completed is None:
                return False
            files = {**store.snapshot(), opening.path: completed.text}
            with scratch_copy(files, "l2mac-verify-", opaque_from=store) as scratch:
                if flagged:
                    issues = find_code_issues(scratch.root, scratch.list_files(), only=[opening.path], types=False)
                    inside = _lines_of(completed.text, opening)
                    if any(i.blocking and i.line in inside for i in issues):
                        return False
                run = run_examples(examples, scratch, env.runner, env.python, env.test_timeout_s) if examples else None
            return not examples or (run is not None and not run.failed)

        return holds

    def _unchanged(self, feedback: str, missed: bool = False) -> str:
        """The feedback, prefixed when the answer changed nothing; the next answer is sampled more freely then
        (and after a missed request), else at the model's own temperature."""
        if self.last.unchanged or missed:
            self.temperature = hotter(self.temperature)
        else:
            self.temperature = None
        if self.last.unchanged:
            return self.setting.domain.render("text_unchanged") + "\n\n" + feedback
        return feedback


@dataclass(frozen=True)
class Text:
    """Fenced files: for small models (the embedded one, GGUF files), which write code far better that way."""

    name: str = "text"
    check_failures: int = 8  # each attempt is one answer in a fresh context
    samples: int = 3  # a small model's own tests are often wrong
    prompt_variant: str = "_text"

    def start(self, step: Step, setting: Setting) -> TextConversation:
        return TextConversation(step, setting)

    def offered(self, tools: list[Tool]) -> list[ToolDefinition]:
        return []

    def read_call(self, response: ModelResponse, tools: list[Tool], recover: bool) -> ToolCallPart | None:
        """The first of ``tools`` whose text form the answer holds: each tool's argument model reads its own form
        from the answer's fenced blocks (``from_answer``)."""
        text = response.text or ""
        blocks = fenced_blocks(text)
        for tool in tools:
            from_answer = getattr(tool.args, "from_answer", None)
            args = from_answer(blocks, text) if from_answer is not None else None
            if args is not None:
                return _call(tool.name, args)
        return None


TEXT = Text()


def _call(tool: str, args: dict[str, object]) -> ToolCallPart:
    return ToolCallPart(tool, json.dumps(args))


def _view_call(m: re.Match[str]) -> ToolCallPart:
    start = int(m.group(2)) if m.group(2) else None
    end = int(m.group(3)) if m.group(3) else None
    return _call("view_files", {"files": [{"path": m.group(1), "start_line": start, "end_line": end}]})


def _written(results: list[tuple[ToolCallPart, ToolResult]]) -> list[str]:
    return [r.content for c, r in results if c.tool_name == "write_files"]


def _summary(text: str, step: Step, files: list[str]) -> str:
    """The model's own words after STEP COMPLETE (or its prose), else the files the step changed."""
    found = _DONE.search(text)
    prose = text[found.end() :] if found else re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    prose = _READ.sub("", prose).strip()
    if prose:
        return prose[:1500]
    return f"Step {step.index} ({step.instruction.title}) is done. Files now: {', '.join(files[:40])}."


def _lines_of(source: str, opening: Opening) -> set[int]:
    """The lines the function ``opening`` names spans in ``source`` (none when it is not there)."""
    found = find_function(source, opening.name, opening.owner)
    return set(range(found[1].lineno, (found[1].end_lineno or found[1].lineno) + 1)) if found else set()
