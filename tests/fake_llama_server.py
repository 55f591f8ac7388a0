"""A stand-in for llama.cpp's llama-server, for lifecycle tests: /health and /completion, with faults chosen by
files in $FAKE_LLAMA_DIR: ``bind-fail-once`` (exits as if the port were taken), ``die-after`` (exits after that
many completions), ``loading`` (answers /health 503 that many times first), ``loop`` (a streamed answer
repeats that file's text as a line until the client hangs up; ``hung-up`` is then written). Each request is
appended to ``requests.jsonl``; ``latency`` (seconds) delays each completion. With ``"stream": true`` the
answer comes as server-sent events, as llama-server sends them: ``data: {...}`` lines, the last with ``stop``."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

state = Path(os.environ["FAKE_LLAMA_DIR"])
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
host = args[args.index("--host") + 1]
(state / "pids").open("a").write(f"{os.getpid()}\n")

if (state / "bind-fail-once").exists():
    (state / "bind-fail-once").unlink()
    print(f"couldn't bind HTTP server socket, hostname: {host}, port: {port}", flush=True)
    sys.exit(1)

lock = threading.Lock()
counts = {"done": 0, "in_flight": 0, "max_in_flight": 0, "health": 0}


def number(name: str, default: float) -> float:
    f = state / name
    return float(f.read_text()) if f.exists() else default


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a: object) -> None:
        pass

    def reply(self, code: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        counts["health"] += 1
        if counts["health"] <= number("loading", 0):
            self.reply(503, {"error": {"code": 503, "message": "Loading model"}})
        else:
            self.reply(200, {"status": "ok"})

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with lock:
            counts["in_flight"] += 1
            counts["max_in_flight"] = max(counts["max_in_flight"], counts["in_flight"])
            with (state / "requests.jsonl").open("a") as f:
                f.write(json.dumps({"pid": os.getpid(), **payload}) + "\n")
        time.sleep(number("latency", 0))
        with lock:
            counts["in_flight"] -= 1
            counts["done"] += 1
            (state / "max_in_flight").write_text(str(counts["max_in_flight"]))
            if counts["done"] > number("die-after", 10**9):
                os._exit(3)  # dies mid-run, the request unanswered
        n = len(payload["prompt"])
        timings = {"prompt_n": n, "cache_n": 0, "prompt_ms": 10.0, "predicted_n": 2, "predicted_ms": 20.0}
        if not payload.get("stream"):
            self.reply(200, {"content": f"seen {n} tokens", "tokens_predicted": 2, "timings": timings})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            if payload.get("return_progress"):  # as llama-server: how much of the prompt the slot had cached
                cached = min(n, number("cached", 0))
                self.event({"content": "", "stop": False, "prompt_progress": {"total": n, "cache": cached}})
            if (state / "loop").exists():
                self.event({"content": "solution.py\n```python\n", "stop": False})
                while True:
                    self.event({"content": (state / "loop").read_text() + "\n", "stop": False})
                    time.sleep(0.001)
            self.event({"content": "seen ", "stop": False})
            self.event({"content": f"{n} tokens", "stop": False})
            self.event({"content": "", "stop": True, "tokens_predicted": 2, "timings": timings})
        except OSError:
            (state / "hung-up").write_text("1")

    def event(self, body: dict[str, object]) -> None:
        self.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
        self.wfile.flush()


ThreadingHTTPServer((host, port), Handler).serve_forever()
