"""The text protocol, for small models: files are written as fenced blocks, not tool calls.

A 1.5B model writes far better code in a fenced block under its file name than as a JSON-escaped string in a
tool call. In this protocol:

- every context is built afresh (:mod:`l2mac.control.text_context`): the step, the files *with their contents*
  (within a share of the window; the rest are named, and a ``READ path:START-END`` line shows any of them, or any
  range, in the next context), the ranges read so far, and the last attempt's result. A small model copies its
  own earlier answers when they stay in the conversation; shown the files and the failure instead, it reacts
  to the failure;
- the files the step names are asked for one at a time, in order (asked for three at once, a small model mixes
  them up), and a named file that lacks a function the step gives it is asked for again, one stub at a time;
- after each answer that completes the step's files, the checks and tests run, and their result is the next
  context's request; the step is declared done with ``STEP COMPLETE`` (or an answer with no new files once the
  checks pass);
- an answer repeated unchanged is said so, and the next one is sampled more freely.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.tools import ToolDefinition

from l2mac.checks.demands import (
    failing_function,
    missing_definitions,
    named_files,
    names_for_file,
    stubbed,
)
from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.output import trim_output
from l2mac.checks.repairs import python_files
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
from l2mac.control.continuation import (
    Opening,
    file_start,
    find_opening,
    function_opening,
    opens_block,
    step_opening,
    without_body,
)
from l2mac.control.protocol import Done, Setting, Turn, cut_off
from l2mac.control.step import Step
from l2mac.control.text_context import text_messages
from l2mac.fenced import fenced_blocks, fenced_files
from l2mac.tools import STEP_COMPLETE, Tool
from l2mac.types import ToolResult

_DONE = re.compile(r"\bSTEP[ _]COMPLETE\b[:.\s]*", re.IGNORECASE)
#: a ranged read: ``READ path``, ``READ path:40`` or ``READ path:40-80`` on a line of its own
_READ = re.compile(r"^\s*READ:?\s+`?([\w./-]+?)`?(?::(\d+)(?:\s*-\s*(\d+))?)?\s*$", re.MULTILINE)
#: how much hotter the next answer is sampled after one that changed nothing
TEMPERATURE_STEP = 0.3
#: answers in a row begun inside the same failing function, at most
MAX_REWRITES = 2
#: a failure calling a function with arguments its signature does not take
_CALLED_WRONG = re.compile(r"TypeError: .*(?:positional argument|keyword argument|required argument)")


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
    opening: Opening | None = None  # the stub the next answer is begun inside (see control.continuation)
    doubted: bool = False  # agreement found the step's tests the likelier wrong: their failures are not fitted to
    rewriting: tuple[str, str, str | None] | None = None  # the function last begun inside to fix a failure
    rewrites: int = 0  # how many times in a row
    #: per stub (path, name), the answers begun inside it that held no body: the next is begun at the body's
    #: indentation, and after that the file is asked for as a whole (see :meth:`_begin`)
    barren: dict[tuple[str, str | None, str], int] = field(default_factory=dict)
    #: the beginning of the next answer when it writes a file whole: its path and opening fence (and a test
    #: file's imports), so the model writes the file asked for (see :func:`file_start`)
    start: str = ""

    @property
    def given(self) -> dict[str, str]:
        """The stubs after the one the next answer is begun inside, given where the model would copy them."""
        return self.opening.given() if self.opening is not None else {}

    def __post_init__(self) -> None:
        store = self.setting.toolbox.env.store
        self.to_write = [p for p in named_files(self.step.instruction.instruction) if not store.exists(p)]
        first = self.to_write[0] if self.to_write else next(filter(self._begin, self._code_files()), None)
        if first is not None:  # a file to write, or a file it writes that still holds a stub the step gives it
            self.feedback, self.focus = self._request_file(first), first

    # -- the context -------------------------------------------------------------------------------------
    def messages(self) -> list[ModelMessage]:
        feedback = self.feedback
        while True:
            messages = text_messages(
                self.setting,
                self._shown_step(),
                feedback,
                focus=self.focus,
                progress=self.progress,
                reads=tuple(self.reads),
                whole=self.written,
                shown_as={self.opening.path: self.opening.elided()} if self.opening and self.opening.rewrite else None,
            )
            if self.opening or self.start:
                messages.append(self.opening.begun() if self.opening else ModelResponse(parts=[TextPart(self.start)]))
            if self.setting.budget.fits(messages) or len(feedback) <= 500:
                return messages
            feedback = trim_output(feedback, len(feedback) // 2)

    def _shown_step(self) -> Step:
        """The step as its next context shows it: rewriting a failing function, without the body the step
        gives that function (see :func:`without_body`)."""
        opening = self.opening
        if opening is None or not opening.rewrite:
            return self.step
        shown = without_body(self.step.instruction.instruction, opening.name, opening.owner)
        return replace(self.step, instruction=self.step.instruction.model_copy(update={"instruction": shown}))

    def restart(self, progress: str) -> None:
        self.progress, self.reads = progress, []

    # -- reading an answer -------------------------------------------------------------------------------
    def read(self, response: ModelResponse) -> Turn:
        text, log, store = response.text or "", self.setting.log, self.setting.toolbox.env.store
        opening, self.opening = self.opening, None
        start, self.start = self.start, ""
        completed = opening.completion(text) if opening is not None else None
        if opening is None and start and not opens_block(text, start):  # else it began the file's block itself
            text = start + text
            if not cut_off(response) and text.count("```") % 2:  # it stopped at the closing fence, which is left out
                text += "\n```"
        if opening is not None:
            # the answer as a whole, begun as it was (a block closed at a body's indentation closes it)
            closed = bool(opening.lead) and text.lstrip(" ").startswith("```")
            text = opening.prefill().rstrip(" ") + text.lstrip(" ") if closed else opening.prefill() + text
            log("continued", path=opening.path, name=opening.name, body=completed is not None)
            if completed is None and not opening.rewrite and not _READ.search(text):
                key = (opening.path, opening.owner, opening.name)
                self.barren[key] = self.barren.get(key, 0) + 1
        # a body that ended before the cut is whole: what the model went on to write is what was cut
        cut = cut_off(response) and not text.rstrip().endswith("```") and not (completed and completed.ended)
        inside = cut and text.count("```") % 2 == 1  # the answer ends inside a file's block: that file was cut
        if opening and completed:
            files = [{"path": opening.path, "content": completed.text}]
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
            self.opening, self.start = opening, start
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
            stubbed_file = next(filter(self._begin, self._code_files()), None)
            if stubbed_file is not None:
                self.focus = stubbed_file
                feedback += "\n\n" + self._request_file(stubbed_file)
            elif (rewrite := self._failing_function(verdict)) is not None:
                self.opening, self.focus = rewrite, rewrite.path
                feedback += "\n\n" + render("text_request_rewrite", path=rewrite.path, name=rewrite.name)
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
            request = self._request_file(pending[0])
        self.feedback = self._unchanged(
            render("text_next_file", saved=wrote, request=request), requested in last.pending
        )
        self.focus = pending[0]
        return missed

    def _failing_function(self, verdict: Verdict) -> Opening | None:
        """Where the answer fixing a failed check is begun, when the model continues begun answers and the report
        points at one function of the step's code files (its traceback, a code problem, or the one function the
        failing test statement calls), and agreement did not point at the tests: inside that function, after its
        docstring, so the answer is its new body. Seen: asked to fix a failing test, the 1.5B model sent the
        whole file back unchanged in 43% of DevBench turns; a body is what it writes best, and is short."""
        self.doubted = self.doubted or verdict.tests_doubted  # once doubted, the tests are not fitted to
        written = sorted(p for p in self.written if not is_test_file(p))  # the step's own code, named or not
        code = [p for p in dict.fromkeys([*self._code_files(), *written]) if p.endswith(".py")]
        asked = "text_request_rewrite" in self.setting.domain.prompts
        if not asked or not self.setting.continues or not code or self.doubted:
            return None
        if _CALLED_WRONG.search(verdict.report) and not verdict.examples_failed:
            return None  # a call that does not fit the signature: a new body cannot fix it (the task's own
            # failing examples still point at a function to fix, whatever a test's call did)
        sources = python_files(self.setting.toolbox.env.store)
        found = failing_function(verdict.report, sources, code, verdict.examples_failed)
        if found is None:
            return None
        self.rewrites = self.rewrites + 1 if found == self.rewriting else 1
        self.rewriting = found
        if self.rewrites > MAX_REWRITES:  # the same function again and again: the whole files are asked for
            return None
        path, name, owner = found
        return function_opening(path, sources[path], name, owner)

    def _code_files(self) -> list[str]:
        """The code files the step writes: a stub in a file it only mentions (an earlier step's interface, a
        base class) is not its to complete."""
        return [p for p in named_files(self.step.instruction.instruction) if not is_test_file(p)]

    def _begin(self, path: str) -> Opening | None:
        """Where the answer for code file ``path`` is begun, when the model continues begun answers and a
        function the step gives the file is a stub there (or in the skeleton the step gives, for a new file).
        Once an answer begun there held no body, the next is begun at the body's indentation; after two, none
        is: the file is asked for as a whole."""
        if not self.setting.continues or not path.endswith(".py"):
            return None
        instruction, store = self.step.instruction.instruction, self.setting.toolbox.env.store
        if not store.exists(path):
            opening = step_opening(instruction, path)
        else:
            opening = find_opening(path, store.read_text(path), names_for_file(instruction, path))
        barren = self.barren.get((path, opening.owner, opening.name), 0) if opening is not None else 0
        if opening is None or not barren:
            return opening
        return opening.indented() if barren == 1 else None

    def _unchanged(self, feedback: str, missed: bool = False) -> str:
        """The feedback, prefixed when the answer changed nothing; the next answer is sampled more freely then
        (and after a missed request), else at the model's own temperature."""
        if self.last.unchanged or missed:
            self.temperature = min(1.0, (self.temperature or 0.2) + TEMPERATURE_STEP)
        else:
            self.temperature = None
        if self.last.unchanged:
            return self.setting.domain.render("text_unchanged") + "\n\n" + feedback
        return feedback

    def _request_file(self, path: str) -> str:
        """The request for one named file: for a code file, naming what the step says it defines (asked only for
        "the file", a small model's first answer was its tests, or a signature and docstring); for a test file,
        naming the modules it must import, not copy."""
        render = self.setting.domain.render
        if not is_test_file(path):
            if (opening := self._begin(path)) is not None:
                self.opening = opening
                return render("text_request_body", path=path, name=opening.name)
            instruction, store = self.step.instruction.instruction, self.setting.toolbox.env.store
            missing = missing_definitions(instruction, python_files(store))  # not defined or imported elsewhere
            owned = [n for n in names_for_file(instruction, path) if n in missing]
            if owned:
                return self._begun_file(path, render("text_request_sample", path=path, names=", ".join(owned)))
            return self._begun_file(path, render("text_request_file", path=path))

        def is_code(p: str) -> bool:
            return p.endswith(".py") and not is_test_file(p) and not p.startswith("tests/")

        store = self.setting.toolbox.env.store
        code = [p for p in self.to_write if is_code(p)] or [p for p in store.list_files() if is_code(p)]
        modules = ", ".join(module_name(p) for p in code)
        request = render("text_request_test_file", path=path, modules=modules or "the project")
        own = [p for p in self._code_files() if p.endswith(".py") and store.exists(p)]  # the step's code only
        return self._begun_file(path, request, {p: store.read_text(p) for p in own})

    def _begun_file(self, path: str, request: str, tested: dict[str, str] | None = None) -> str:
        """``request`` for file ``path``, and the next answer begun at its start (the path, the opening fence, a
        test file's imports of ``tested``), when the model continues begun answers and the domain says so."""
        if not self.setting.continues or "text_begun_file" not in self.setting.domain.prompts:
            return request
        self.start = file_start(path, tested)
        return request + "\n" + self.setting.domain.render("text_begun_file", path=path)


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
