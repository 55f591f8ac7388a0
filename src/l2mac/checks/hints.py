"""Hints for common runtime errors in a failing test run (the rules are data, in ``hints.yaml``).

A small model shown a traceback tends to write the failing line again unchanged; a sentence that says what
the error means and what to write instead is what makes it change the line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

_SECTION = re.compile(r"^_{3,} .+ _{3,}$")
_ERROR = re.compile(r"^E\s+(?P<text>\S.*)$")
#: a traceback frame or a check's line: "todo/core.py:19: TypeError", "todo/core.py:19: in save_todos"
FRAME = re.compile(r"^(?P<path>[\w./-]+\.py):(?P<line>\d+): ", re.MULTILINE)
MAX_HINTS = 3


@dataclass(frozen=True)
class _Rule:
    error: re.Pattern[str]
    code: re.Pattern[str] | None
    hint: str
    named_in_test: str = ""  # a group of ``error`` whose value (a path) the test's own lines must quote


@cache
def _rules() -> tuple[_Rule, ...]:
    text = resources.files(__package__).joinpath("hints.yaml").read_text(encoding="utf-8")
    rules: list[_Rule] = []
    for r in yaml.safe_load(text):
        error, group = re.compile(r["error"]), r.get("named_in_test", "")
        if group and group not in error.groupindex:
            raise ValueError(f"hints.yaml: named_in_test names {group!r}, not a group of {r['error']!r}")
        code = re.compile(r["code"]) if r.get("code") else None
        rules.append(_Rule(error, code, " ".join(r["hint"].split()), group))
    return tuple(rules)


@dataclass(frozen=True)
class _Failure:
    error: str  # the exception line, e.g. "TypeError: 'Todo' object is not iterable"
    code: str  # the source line it was raised from (pytest's ">" line), or ""
    where: str  # the last project frame, "todo/core.py:19", or ""
    test: str  # the test's own lines (before the first frame), as pytest shows them


def _failures(output: str) -> list[_Failure]:
    """The first exception of each failure section in pytest's output, with the line and project frame."""
    out: list[_Failure] = []
    code, where, error = "", "", ""
    test: list[str] = []
    framed = False  # past the test's own lines

    def flush() -> None:
        if error:
            out.append(_Failure(error, code, where, "\n".join(test)))

    for line in output.splitlines():
        if _SECTION.match(line):
            flush()
            code, where, error, test, framed = "", "", "", [], False
            continue
        raised = _ERROR.match(line)
        if line.startswith(">") and not error:
            code = line[1:].strip()
        elif raised and not error:
            error = raised.group("text").strip()
        elif m := FRAME.match(line):
            # the test's lines end at the first frame after them (--tb=short begins with the test's own frame)
            framed = framed or any(t.strip() for t in test)
            if not m.group("path").startswith("/"):  # a project file, not /usr/...
                where = f"{m.group('path')}:{m.group('line')}"
        if not framed and not raised:
            test.append(line)
    flush()
    return out


def _quotes(lines: str, path: str) -> bool:
    """Whether ``lines`` hold ``path``, or its file name (a test's ``tmp_path / "data.csv"``), as a string."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return any(f"{q}{p}{q}" in lines for p in {path, name} if p for q in "'\"")


def _explained(failure: _Failure) -> tuple[_Rule, re.Match[str]] | None:
    """The first rule that explains ``failure``, with its match."""
    for rule in _rules():
        m = rule.error.search(failure.error)
        if m is None or (rule.code is not None and not rule.code.search(failure.code)):
            continue
        if rule.named_in_test and not _quotes(failure.test, m.group(rule.named_in_test) or ""):
            continue
        return rule, m
    return None


def made_by_the_tests(output: str) -> bool:
    """Whether every failure in ``output`` is one the test makes itself, so no change to the code can mend it:
    each raised for a file the test's own lines name and nothing made (the ``named_in_test`` rules). Seen on
    ClassEval_34 at de8d781: each of a lead's tests opened ``example.docx``, which none of them wrote; the
    failures went to the agents of the four methods it reached, who rewrote right code twice (one dropped
    ``doc.save()``), and the tests failed the same way after each round."""
    failures = _failures(output)
    return bool(failures) and all(
        (found := _explained(f)) is not None and bool(found[0].named_in_test) for f in failures
    )


def failure_hints(output: str) -> list[str]:
    """One line per distinct hint that applies to the failures in ``output`` (at most :data:`MAX_HINTS`),
    naming where the error was raised."""
    hints: list[str] = []
    seen: set[str] = set()
    for failure in _failures(output):
        if (found := _explained(failure)) is not None:
            rule, m = found
            advice = rule.hint.format(**{k: v or "" for k, v in m.groupdict().items()})
            if advice not in seen:
                seen.add(advice)
                where = f" at {failure.where}" if failure.where else ""
                line = f" (`{failure.code}`)" if failure.code and len(failure.code) <= 120 else ""
                error = failure.error if len(failure.error) <= 150 else failure.error[:150] + "..."
                hints.append(f"Hint: {error}{where}{line}. {advice}")
        if len(hints) >= MAX_HINTS:
            break
    return hints
