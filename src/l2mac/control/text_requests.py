"""What the text protocol asks for next, and where the next answer is begun for the model.

A small model does best asked for one thing at a time, with its answer begun where that thing starts: a named
file whole (begun at its path and opening fence, a test file at its imports and first ``def test_``), a stub's
body (begun inside the function, after its docstring), a failing function's new body (begun inside it). This
module makes those requests, puts each answer back together with what it was begun with, and keeps what the
next request depends on: the stub the next answer is begun inside, the answers begun there that held no body,
the function rewritten last. Reading the files out of an answer is :class:`l2mac.control.text.TextConversation`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from l2mac.checks.demands import (
    failing_function,
    mentioned_definitions,
    missing_definitions,
    named_files,
    names_for_file,
    problem_lines,
)
from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.python import called_not_defined, imported_not_defined
from l2mac.checks.repairs import merge_definitions, python_files
from l2mac.checks.shape import said_to_return_nothing
from l2mac.checks.verdict import Verdict
from l2mac.control.continuation import (
    Completed,
    Opening,
    find_opening,
    function_opening,
    opens_block,
    return_opening,
    step_opening,
    used_stub,
    with_asked_stubs,
)
from l2mac.control.protocol import Setting
from l2mac.control.step import Step
from l2mac.control.test_start import file_start

#: answers in a row begun inside the same failing function, at most
MAX_REWRITES = 2
#: a failure calling a function with arguments its signature does not take
_CALLED_WRONG = re.compile(r"TypeError: .*(?:positional argument|keyword argument|required argument)")


@dataclass(frozen=True)
class Begun:
    """An answer read whole: its text with what it was begun with, the stub or file it was begun at, and the
    stub's completion when it held a body."""

    text: str
    opening: Opening | None
    start: str
    completed: Completed | None


@dataclass
class Requests:
    """The requests of one step's text conversation, and where the next answer is begun."""

    step: Step
    setting: Setting
    opening: Opening | None = None  # the stub the next answer is begun inside (see control.continuation)
    #: the beginning of the next answer when it writes a file whole: its path and opening fence (and a test
    #: file's imports), so the model writes the file asked for (see :func:`file_start`)
    start: str = ""
    doubted: bool = False  # agreement found the step's tests the likelier wrong: their failures are not fitted to
    rewriting: tuple[str, str, str | None] | None = None  # the function last begun inside to fix a failure
    rewrites: int = 0  # how many times in a row
    #: per stub (path, owner, name), the answers begun inside it that held no body: the next is begun at the
    #: body's indentation, and after that the file is asked for as a whole (see :meth:`begin`)
    barren: dict[tuple[str, str | None, str], int] = field(default_factory=dict)
    #: per function the step's code imports from a module lacking it, the answers begun inside its stub there
    imported: dict[tuple[str, str | None, str], int] = field(default_factory=dict)

    def code_files(self) -> list[str]:
        """The code files the step writes: a stub in a file it only mentions (an earlier step's interface, a
        base class) is not its to complete."""
        return [p for p in named_files(self.step.instruction.instruction) if not is_test_file(p)]

    def begin(self, path: str) -> Opening | None:
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
            source, names = store.read_text(path), names_for_file(instruction, path)
            # a class the step names without a signature is its to complete too (seen on the URL shortener at
            # 8922e3d: "a class URLShortener that handles ...", all of its methods left `pass`, never asked for)
            mentioned = [n for n in mentioned_definitions(instruction, source) if n not in names]
            opening = find_opening(path, source, [*names, *mentioned])
            if opening is None and (grown := self._with_asked_stubs(path, source, names)) is not None:
                opening = find_opening(path, grown, names)
        barren = self.barren.get((path, opening.owner, opening.name), 0) if opening is not None else 0
        if opening is None or not barren:
            return opening
        return opening.indented() if barren == 1 else None

    def _with_asked_stubs(self, path: str, source: str, names: list[str]) -> str | None:
        """``source`` with stubs of the new functions the step asks ``path`` for (see :func:`with_asked_stubs`).
        The project's modules are read only when the module itself lacks one of them: this is asked at every failed
        check, and a repository may have thousands of files."""
        absent = [n for n in names if not re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(n)}\b", source, re.M)]
        if not absent:
            return None
        missing = missing_definitions(" ".join(f"{n}()" for n in absent), python_files(self.setting.toolbox.env.store))
        return with_asked_stubs(source, missing, self.step.task, self.step.instruction.instruction)

    def held_no_body(self, opening: Opening) -> None:
        """An answer begun inside ``opening``'s stub held no body."""
        key = (opening.path, opening.owner, opening.name)
        self.barren[key] = self.barren.get(key, 0) + 1

    def answered(self, text: str, cut: bool) -> Begun:
        """The answer ``text`` as a whole, with what it was begun with (the next answer is begun afresh). An
        answer begun at a file's start that opens the file's block itself is read as it is; one the model
        stopped at the closing fence gets the fence back (the fence is the stop, left out of the answer)."""
        opening, self.opening = self.opening, None
        start, self.start = self.start, ""
        completed = opening.completion(text) if opening is not None else None
        if opening is not None:
            # begun as it was (a block closed at a body's indentation closes it)
            closed = bool(opening.lead) and text.lstrip(" ").startswith("```")
            text = opening.prefill().rstrip(" ") + text.lstrip(" ") if closed else opening.prefill() + text
        elif start and not opens_block(text, start):
            text = start + text
            if not cut and text.count("```") % 2:
                text += "\n```"
        return Begun(text, opening, start, completed)

    def again(self, begun: Begun) -> None:
        """The next answer is begun as ``begun`` was: the same request comes again."""
        self.opening, self.start = begun.opening, begun.start

    def file(self, path: str, to_write: list[str]) -> str:
        """The request for one named file: for a code file, naming what the step says it defines (asked only for
        "the file", a small model's first answer was its tests, or a signature and docstring); for a test file,
        naming the modules it must import, not copy (``to_write``: the files the step has yet to write)."""
        render = self.setting.domain.render
        store = self.setting.toolbox.env.store
        if not is_test_file(path):
            if (opening := self.begin(path)) is not None:
                self.opening = opening
                return render("text_request_body", path=path, name=opening.name)
            instruction = self.step.instruction.instruction
            missing = missing_definitions(instruction, python_files(store))  # not defined or imported elsewhere
            owned = [n for n in names_for_file(instruction, path) if n in missing]
            if owned:
                return self._begun_file(path, render("text_request_sample", path=path, names=", ".join(owned)))
            return self._begun_file(path, render("text_request_file", path=path))

        def is_code(p: str) -> bool:
            return p.endswith(".py") and not is_test_file(p) and not p.startswith("tests/")

        code = [p for p in to_write if is_code(p)] or [p for p in store.list_files() if is_code(p)]
        modules = ", ".join(module_name(p) for p in code)
        request = render("text_request_test_file", path=path, modules=modules or "the project")
        own = [p for p in self.code_files() if p.endswith(".py") and store.exists(p)]  # the step's code only
        return self._begun_file(path, request, {p: store.read_text(p) for p in own})

    def fix(self, path: str | None) -> str:
        """What to add to a request to fix a failed check when no function is pointed at: the next answer begun
        at the start of ``path``, the file the report points at first, so the model writes that file rather than
        prose about it (a test file's imports of the step's code too); "" when none is begun. Seen on
        ClassEval_0 at 5d50fc8: four such answers of 730 to 1,080 tokens (up to 7 minutes each here) began "Your
        implementation of ... has a small issue", or made up a test run's output."""
        store = self.setting.toolbox.env.store
        if path is None or not path.endswith(".py") or not store.exists(path):
            return ""
        own = [p for p in self.code_files() if p.endswith(".py") and store.exists(p)]
        tested = {p: store.read_text(p) for p in own} if is_test_file(path) else None
        return self._begun_file(path, "", tested).strip()

    def _begun_file(self, path: str, request: str, tested: dict[str, str] | None = None) -> str:
        """``request`` for file ``path``, and the next answer begun at its start (the path, the opening fence, a
        test file's imports of ``tested``), when the model continues begun answers and the domain says so."""
        if not self.setting.continues or "text_begun_file" not in self.setting.domain.prompts:
            return request
        self.start = file_start(path, tested)
        return request + "\n" + self.setting.domain.render("text_begun_file", path=path)

    def imported_stub(self, verdict: Verdict, written: set[str]) -> Opening | None:
        """Where the answer writing a function that the step's code imports from a project module lacking it is
        begun: inside its stub in that module, as the code calls it (see :func:`used_stub`); each such function
        at most twice. ``written``: the files the step wrote."""
        if not self.setting.continues or "text_request_imported" not in self.setting.domain.prompts:
            return None
        store = self.setting.toolbox.env.store
        own = {*self.code_files(), *written}
        sources = python_files(store)
        for user, name, path in [*imported_not_defined(verdict.report), *called_not_defined(verdict.report, sources)]:
            key = (path, None, name)
            if user not in own or is_test_file(path) or not store.exists(path) or self.imported.get(key, 0) >= 2:
                continue
            stub = used_stub(name, user, store.read_text(user)) if store.exists(user) else None
            grown = merge_definitions(store.read_text(path), stub, add_new=True) if stub else None
            opening = find_opening(path, grown, [name]) if grown else None
            if opening is not None:
                self.imported[key] = self.imported.get(key, 0) + 1
                return replace(opening, used_by=user)
        return None

    def failing_function(self, verdict: Verdict, written: set[str]) -> Opening | None:
        """Where the answer fixing a failed check is begun, when the model continues begun answers and the report
        points at one function of the step's code files (its traceback, a code problem, or the one function the
        failing test statement calls), and agreement did not point at the tests: inside that function, after its
        docstring, so the answer is its new body. Seen: asked to fix a failing test, the 1.5B model sent the
        whole file back unchanged in 43% of DevBench turns; a body is what it writes best, and is short.
        ``written``: the files the step wrote (its own code, named or not). Once agreement doubts the tests, only
        a code problem or the task's own failing examples point at a function: seen on ClassEval_2 at 176fb78,
        parse_arguments() "returns nothing" four checks in a row while every answer rewrote the doubted tests."""
        self.doubted = self.doubted or verdict.tests_doubted  # once doubted, the tests are not fitted to
        own = sorted(p for p in written if not is_test_file(p))
        code = [p for p in dict.fromkeys([*self.code_files(), *own]) if p.endswith(".py")]
        asked = "text_request_rewrite" in self.setting.domain.prompts
        if not asked or not self.setting.continues or not code:
            return None
        report = verdict.report.split("Tests:")[0] if self.doubted else verdict.report
        if _CALLED_WRONG.search(report) and not verdict.examples_failed:
            return None  # a call that does not fit the signature: a new body cannot fix it (the task's own
            # failing examples still point at a function to fix, whatever a test's call did)
        sources = python_files(self.setting.toolbox.env.store)
        found = failing_function(report, sources, code, verdict.examples_failed)
        if found is None:
            return None
        self.rewrites = self.rewrites + 1 if found == self.rewriting else 1
        self.rewriting = found
        if self.rewrites > MAX_REWRITES:  # the same function again and again: the whole files are asked for
            return None
        path, name, owner = found
        flagged = problem_lines(verdict.report, path)
        if said_to_return_nothing(verdict.report, path, name):  # its body may be right: only its end is asked for
            opening = return_opening(path, sources[path], name, owner, flagged)
            if opening is not None:
                return opening
        return function_opening(path, sources[path], name, owner)
