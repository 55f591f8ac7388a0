"""Fits tool and check output into the context: the first error is kept whole, the rest is cut."""

from __future__ import annotations

import re

_PYTEST_SECTION = re.compile(r"^_{3,} .+ _{3,}$", re.MULTILINE)
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):$", re.MULTILINE)


def _first_error_block(text: str) -> tuple[int, int] | None:
    sections = list(_PYTEST_SECTION.finditer(text))
    if sections:
        start = sections[0].start()
        end = sections[1].start() if len(sections) > 1 else len(text)
        nxt = re.search(r"^={3,} ", text[start + 1 :], re.MULTILINE)
        if nxt and start + 1 + nxt.start() < end:
            end = start + 1 + nxt.start()
        return start, end
    tb = _TRACEBACK.search(text)
    if tb:
        return tb.start(), len(text)
    return None


def trim_output(text: str, max_chars: int) -> str:
    """``text`` cut to about ``max_chars``, keeping the first error block whole and the closing lines."""
    if len(text) <= max_chars:
        return text
    tail_lines = text.rstrip().splitlines()[-3:]
    tail = "\n".join(tail_lines)
    block = _first_error_block(text)
    if block is not None:
        first = text[block[0] : block[1]].rstrip()
        budget = max_chars - len(tail) - 80
        if len(first) > budget > 200:
            # even the first error is too long: keep its start and its end, where the exception is
            half = budget // 2
            first = first[:half] + f"\n[... {len(first) - 2 * half} characters cut ...]\n" + first[-half:]
        omitted = len(text) - len(first) - len(tail)
        return f"{first}\n[... {omitted} more characters of output cut ...]\n{tail}"
    head = text[: max_chars - len(tail) - 60]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters cut ...]\n{tail}"
