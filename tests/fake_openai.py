"""A fake OpenAI-compatible server on loopback that plays a script of answers and faults, for fault injection.

Each script entry answers one HTTP request: an answer (``Answer``) or a fault name:

- ``"429"``: rate limited, with ``Retry-After: 1``;      - ``"500"``, ``"503"``: server errors;
- ``"timeout"``: answers only after 3 s (longer than the client's timeout);
- ``"drop"``: closes the connection without a response;
- ``Answer(..., finish_reason="length")``: an answer cut off by the length limit;
- ``Answer()`` (no text, no tool call): an empty answer; ``Answer(tool_calls=[(name, "{not json")])``: bad JSON.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    content: str | None = None
    tool_calls: list[tuple[str, str]] = field(default_factory=list)  # (name, raw JSON arguments)
    finish_reason: str | None = None


@dataclass
class Served:
    at: float
    what: str
    body: dict[str, Any]
    headers: dict[str, str]


class FakeOpenAI:
    def __init__(
        self, script: list[Answer | str], answer_for: Callable[[dict[str, Any]], Answer] | None = None
    ) -> None:
        self.script = list(script)
        self.answer_for = answer_for  # answers every request from its body instead (concurrent clients)
        self.served: list[Served] = []
        self.lock = threading.Lock()

    def next(self, body: dict[str, Any]) -> Answer | str:
        if self.answer_for is not None:
            return self.answer_for(body)
        with self.lock:
            if not self.script:
                raise AssertionError("the fake server's script is exhausted")
            return self.script.pop(0)

    @staticmethod
    def completion(answer: Answer, n: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": answer.content}
        if answer.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{n}_{i}", "type": "function", "function": {"name": name, "arguments": args}}
                for i, (name, args) in enumerate(answer.tool_calls)
            ]
        reason = answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop")
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            step = fake.next(body)
            what = step if isinstance(step, str) else "answer"
            fake.served.append(Served(time.monotonic(), what, body, dict(self.headers)))
            error = {"error": {"message": f"injected {what}", "type": "server_error"}}
            if step == "429":
                self._send(429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": "1"})
            elif step in ("500", "503"):
                self._send(int(step), error)
            elif step == "timeout":
                time.sleep(3)
                self._send(500, error)
            elif step == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
            else:
                assert isinstance(step, Answer)
                self._send(200, FakeOpenAI.completion(step, len(fake.served)))

    return Handler


@contextmanager
def serve(
    script: list[Answer | str], answer_for: Callable[[dict[str, Any]], Answer] | None = None
) -> Iterator[tuple[FakeOpenAI, str]]:
    """Run the fake on a free loopback port; yields it and its base URL (``http://127.0.0.1:PORT/v1``)."""
    fake = FakeOpenAI(script, answer_for)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]  # injected drops
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
