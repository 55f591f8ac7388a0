"""The journal of model calls (``<project>/.l2mac/journal.jsonl``): what makes an interrupted run resumable.

Every answer is appended, flushed and fsynced the moment it arrives, before anything acts on it. ``l2mac resume``
runs the task again from its start with the same settings: each request the journal holds (same digest) is
answered from it, so no paid call is made twice, and the tools re-apply every write to a clean project folder,
so none is lost or applied twice. Requests the journal does not hold (the run went differently, or got further)
are made live and journaled.

A kill can cut the last line short; that line is dropped on load. A damaged line before the end is an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse, ToolCallPart

from l2mac.errors import RunError

JOURNAL_FILE = "journal.jsonl"
FORMAT = 1
# What differs between a run and its replay without changing what happens: test timings ("in 0.41s"), object
# addresses in tracebacks ("at 0x7f53..."), pytest's numbered temporary folders ("pytest-3").
_VOLATILE = re.compile(r"\b\d+(?:\.\d+)?s\b|\b0x[0-9a-fA-F]{4,}\b|(?<=pytest-)\d+\b")


def request_key(messages: Sequence[ModelMessage], purpose: str, tools: Sequence[str] = ()) -> str:
    """A digest of what a request says: each part's kind and text, tool names and arguments; not timestamps or
    ids, which differ between a run and its replay."""
    h = hashlib.sha256(f"{purpose}\x00{','.join(tools)}".encode())
    for m in messages:
        h.update(b"\x01" + (b"req" if isinstance(m, ModelRequest) else b"resp"))
        for part in m.parts:
            h.update(b"\x02" + part.part_kind.encode())
            if isinstance(part, ToolCallPart):
                args = part.args if isinstance(part.args, str) else json.dumps(part.args, sort_keys=True)
                h.update(f"{part.tool_name}\x00{args}".encode())
            else:
                content = getattr(part, "content", "")
                text = content if isinstance(content, str) else json.dumps(content, sort_keys=True, default=str)
                h.update(_VOLATILE.sub("#", text).encode())
                h.update(str(getattr(part, "tool_name", "")).encode())
    return h.hexdigest()[:32]


@dataclass(frozen=True)
class JournaledCall:
    seq: int
    key: str
    purpose: str
    response: ModelResponse
    cost_usd: float | None


def _encode(call: JournaledCall) -> str:
    response = ModelMessagesTypeAdapter.dump_python([call.response], mode="json")[0]
    entry = {"v": FORMAT, "seq": call.seq, "key": call.key, "purpose": call.purpose, "cost_usd": call.cost_usd}
    return json.dumps({**entry, "response": response}, separators=(",", ":"))


def _decode(line: str) -> JournaledCall:
    d: dict[str, Any] = json.loads(line)
    response = ModelMessagesTypeAdapter.validate_python([d["response"]])[0]
    if not isinstance(response, ModelResponse):
        raise ValueError("not a model response")
    return JournaledCall(int(d["seq"]), str(d["key"]), str(d["purpose"]), response, d.get("cost_usd"))


def load_journal(path: Path) -> list[JournaledCall]:
    """The calls in ``path`` in order. A torn last line (a kill mid-append) is dropped; other damage raises."""
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    calls: list[JournaledCall] = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            calls.append(_decode(raw.decode("utf-8")))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            if all(not rest.strip() for rest in lines[number:]):
                break  # the torn tail of an interrupted append
            raise RunError(
                f"{path} line {number} is damaged ({type(e).__name__}); resume cannot trust the journal after it. "
                f"Move the file away to start the task over, or truncate it before line {number} to resume up to there."
            ) from e
    return calls


def _by_request(calls: Sequence[JournaledCall]) -> dict[str, deque[JournaledCall]]:
    """``calls`` queued by request digest, each queue in the order the requests were made."""
    queues: dict[str, deque[JournaledCall]] = {}
    for call in sorted(calls, key=lambda c: c.seq):
        queues.setdefault(call.key, deque()).append(call)
    return queues


class Journal:
    """Appends calls as they happen and serves the journaled ones to a resumed run; and, given an earlier run's
    calls to ``reuse``, serves its answers to the same requests (a changed setting or version of l2mac run on
    the same task: the same answers up to where the run goes differently, so what the change does shows alone).

    A journaled answer is served to a request with the same digest, in the order the requests were made (so
    agents that ran concurrently, and finished in another order, still get their own answers); a request the
    journal does not hold is made live and journaled."""

    def __init__(self, path: Path, replay: Sequence[JournaledCall] = (), reuse: Sequence[JournaledCall] = ()) -> None:
        self.path = path
        # identical requests made at once (samples) are journaled as they finish, but their numbers are taken
        # as they are made: served by number, each gets the answer it got before, so the same pool of samples
        # comes in the same order (seen: served as journaled, a replayed agreement kept another sample)
        self._pending = _by_request(replay)
        self._borrowed = _by_request(reuse)
        self._seq = 0
        self.replayed = 0
        self.reused = 0
        self.diverged_at: int | None = None
        if replay:  # rewrite without a torn tail, so new entries start on a line of their own
            self._rewrite(replay)

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def lookup(self, seq: int, key: str) -> JournaledCall | None:
        """The journaled answer to this request, if the journal holds one not served yet, else one of the earlier
        run's answers it reuses (journaled here as this run's); else None."""
        if waiting := self._pending.get(key):
            self.replayed += 1
            return waiting.popleft()
        if borrowed := self._borrowed.get(key):
            call = borrowed.popleft()
            call = JournaledCall(seq, key, call.purpose, call.response, call.cost_usd)
            self.append(call)
            self.reused += 1
            return call
        if self.diverged_at is None and (any(self._pending.values()) or any(self._borrowed.values())):
            self.diverged_at = seq  # the first request the journal did not hold while it still had answers
        return None

    def append(self, call: JournaledCall) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(_encode(call) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _rewrite(self, calls: Sequence[JournaledCall]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            f.writelines(_encode(c) + "\n" for c in calls)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
