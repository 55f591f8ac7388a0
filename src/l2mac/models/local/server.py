"""llama.cpp's own server (``llama-server``) as a managed child process: the embedded model with parallel slots.

In-process, llama-cpp-python decodes one sequence at a time, so concurrent agents (the soa strategy) queue. A
``llama-server`` started with ``--parallel N`` decodes up to N requests in one batch (continuous batching), and
keeps each slot's prompt in its KV cache. The server is started on a free loopback port, health-checked, and
stopped when the run ends, on error and on Ctrl-C; it dies with its parent (PR_SET_PDEATHSIG) even on kill -9.

Only the raw ``/completion`` endpoint is used, with a prompt l2mac rendered itself from the model's chat
template (see ``llama.LocalChat``): the server's chat parsing is never relied on.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic_ai.exceptions import ModelAPIError, ModelContextWindowExceededError

from l2mac.errors import ConfigError

#: llama-server loads a 1 GB model in a few seconds; a cold disk or a larger model may need much longer
STARTUP_TIMEOUT_S = 180.0
_LOG_TAIL = 2000
_EXIT_GRACE_S = 2.0  # how long a failed request waits to learn whether the server died


def find_server(configured: str | None, environ: dict[str, str] | None = None) -> Path:
    """The llama-server binary: ``configured`` (a path, or a name looked up on PATH)."""
    if not configured:
        raise ConfigError("no llama-server is configured")
    path = Path(configured).expanduser()
    if path.is_file() and os.access(path, os.X_OK):
        return path
    found = shutil.which(configured, path=(environ or dict(os.environ)).get("PATH"))
    if found:
        return Path(found)
    raise ConfigError(
        f"llama-server not found at {configured!r}: give the path of llama.cpp's llama-server binary "
        "(--llama-server), or leave it unset to run the model in-process"
    )


#: the share of the machine's memory the slots' KV cache may take (llama-server sets it aside at start)
KV_MEMORY_SHARE = 0.5


def kv_bytes_per_token(metadata: Mapping[str, str]) -> int | None:
    """The KV cache a token takes in a slot (f16 keys and values in every layer), from a GGUF model's metadata;
    None when the metadata does not say."""
    arch = metadata.get("general.architecture", "llama")
    try:
        layers = int(metadata[f"{arch}.block_count"])
        heads = int(metadata[f"{arch}.attention.head_count"])
        kv_heads = int(metadata.get(f"{arch}.attention.head_count_kv", heads))
        head_dim = int(metadata.get(f"{arch}.attention.key_length", int(metadata[f"{arch}.embedding_length"]) // heads))
    except (KeyError, ValueError, ZeroDivisionError):
        return None
    return layers * kv_heads * head_dim * 2 * 2


def physical_memory() -> int | None:
    """The machine's memory in bytes, where the system says."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def fitting_slots(slots: int, context_per_slot: int, per_token: int | None, memory: int | None) -> int:
    """At most ``slots``, as many as fit their KV cache (``context_per_slot`` tokens of ``per_token`` bytes each)
    in :data:`KV_MEMORY_SHARE` of ``memory``; at least one. Seen: 12 slots of 16,384 tokens of Qwen2.5-Coder-1.5B
    set aside 5.25 GiB at start; 32 (8 workers) would take 14 GiB."""
    if not per_token or not memory:
        return slots
    return max(1, min(slots, int(memory * KV_MEMORY_SHARE) // (context_per_slot * per_token)))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


#: exec'd in place of the server so that it gets SIGTERM when l2mac dies, even by kill -9 (PR_SET_PDEATHSIG
#: survives exec); a shim rather than preexec_fn, which is unsafe once threads run
_SHIM = (
    "import ctypes,os,signal,sys\n"
    "try: ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n"
    "except (OSError, AttributeError): pass\n"
    "os.execv(sys.argv[1], sys.argv[1:])"
)


@dataclass
class LlamaServer:
    """One ``llama-server`` child serving one GGUF model with ``slots`` parallel slots."""

    binary: Path
    model: Path
    context_per_slot: int
    slots: int = 4
    threads: int | None = None
    log_path: Path | None = None
    host: str = "127.0.0.1"
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    extra_args: Sequence[str] = ()
    port: int = 0
    restarts: int = 0
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log: IO[bytes] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _closed: bool = field(default=False, repr=False)

    # -- lifecycle -----------------------------------------------------------------------------------------
    def command(self, port: int) -> list[str]:
        threads = self.threads or os.cpu_count() or 2
        return [
            str(self.binary),
            *("--model", str(self.model), "--host", self.host, "--port", str(port)),
            *("--ctx-size", str(self.context_per_slot * self.slots), "--parallel", str(self.slots)),
            *("--threads", str(threads), "--no-webui"),
            *self.extra_args,
        ]

    def start(self) -> None:
        """Start the child and wait until it answers /health; a port someone took meanwhile is tried again."""
        self._closed = False
        last = ""
        for _ in range(3):
            port = free_port(self.host)
            self._spawn(port)
            try:
                self._wait_healthy()
                self.port = port
                return
            except _PortTaken as e:
                last = str(e)
                self.stop()
        raise ModelAPIError("llama-server", f"could not get a free port: {last}")

    def _spawn(self, port: int) -> None:
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child's lifetime
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SHIM, *self.command(port)],
            stdin=subprocess.DEVNULL,
            stdout=self._log or subprocess.DEVNULL,
            stderr=subprocess.STDOUT if self._log else subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C reaches l2mac, which stops the server itself
        )
        self.port = port

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            assert self._proc is not None
            code = self._proc.poll()
            if code is not None:
                tail = self.log_tail()
                if "bind" in tail.lower() or "address already in use" in tail.lower():
                    raise _PortTaken(tail)
                raise ModelAPIError("llama-server", f"llama-server exited with code {code} while starting: {tail}")
            try:
                with urllib.request.urlopen(self.url("/health"), timeout=2) as r:
                    if r.status == 200:
                        return
            except urllib.error.HTTPError as e:
                if e.code != 503:  # 503: still loading the model
                    raise ModelAPIError("llama-server", f"/health answered {e.code}") from e
            except OSError:
                pass  # not listening yet
            time.sleep(0.2)
        self.stop()
        raise ModelAPIError("llama-server", f"not ready after {self.startup_timeout_s:.0f} s: {self.log_tail()}")

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _exits_within(self, seconds: float) -> bool:
        """Whether the child has exited or does so within `seconds`: a dying server drops its connections a
        moment before the OS reports it gone, so a failed request must not be judged by `alive()` alone."""
        if self._proc is None:
            return True
        try:
            self._proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    def close(self) -> None:
        """Stop the child for good: requests in flight or still to come fail at once (ModelAPIError, which the
        client does not retry) instead of starting it again, so l2mac can exit on Ctrl-C."""
        self._closed = True
        self.stop()

    def stop(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL after 10 s); safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "(no server log)"
        return self.log_path.read_bytes()[-_LOG_TAIL:].decode("utf-8", "replace").strip()

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    # -- requests ------------------------------------------------------------------------------------------
    def complete(
        self, payload: dict[str, Any], timeout_s: float, stop_when: Callable[[str], bool] | None = None
    ) -> dict[str, Any]:
        """POST /completion. With ``stop_when``, the answer is streamed and each piece passed to it; once it
        returns True the connection is closed, which ends the generation on the server, and the answer so far is
        returned (``"stopped_by_client": True``). A server that died is started again once and the request
        repeated; its answer errors become ModelAPIError (retried by the client) or
        ModelContextWindowExceededError."""
        for attempt in range(2):
            if self._closed:
                raise ModelAPIError("llama-server", "the server was stopped: l2mac is shutting down")
            try:
                if stop_when is None:
                    return self._post("/completion", payload, timeout_s)
                return self._stream("/completion", payload, timeout_s, stop_when)
            except OSError as e:
                if attempt == 1 or not self._exits_within(_EXIT_GRACE_S):
                    raise ModelAPIError("llama-server", f"request failed: {e}") from e
                with self._lock:  # one thread restarts it; the others find it alive again
                    if not self.alive() and not self._closed:
                        code = self._proc.returncode if self._proc else None
                        self.stop()
                        self.restarts += 1
                        self.start()
                        if self.log_path is not None:
                            with open(self.log_path, "a", encoding="utf-8") as f:
                                f.write(f"\n[l2mac] llama-server had exited (code {code}); restarted\n")
        raise AssertionError("unreachable")

    def _post(self, path: str, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(self._request(path, payload), timeout=timeout_s) as r:
                data: dict[str, Any] = json.loads(r.read())
                return data
        except urllib.error.HTTPError as e:
            raise self._answer_error(e) from e

    def _stream(
        self, path: str, payload: dict[str, Any], timeout_s: float, stop_when: Callable[[str], bool]
    ) -> dict[str, Any]:
        """The server-sent events of a streamed completion: ``data: {...}`` lines, the last with ``stop``."""
        pieces: list[str] = []
        progress: dict[str, Any] = {}  # how much of the prompt the slot had cached: the final event is never read
        request = self._request(path, {**payload, "stream": True, "return_progress": True})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as r:
                for raw in r:
                    line = raw.decode("utf-8", "replace").strip()
                    if not line.startswith("data:") or line == "data: [DONE]":
                        continue
                    event: dict[str, Any] = json.loads(line[5:])
                    progress = event.get("prompt_progress") or progress
                    piece = str(event.get("content", ""))
                    pieces.append(piece)
                    if event.get("stop"):
                        return {**event, "content": "".join(pieces)}
                    if piece and stop_when(piece):
                        stopped = {
                            "content": "".join(pieces),
                            "tokens_predicted": len(pieces),
                            "stopped_by_client": True,
                        }
                        return {**stopped, **({"prompt_progress": progress} if progress else {})}
        except urllib.error.HTTPError as e:
            raise self._answer_error(e) from e
        raise ConnectionResetError("the stream ended without its final event")

    def _request(self, path: str, payload: dict[str, Any]) -> urllib.request.Request:
        return urllib.request.Request(
            self.url(path), data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"}
        )

    @staticmethod
    def _answer_error(e: urllib.error.HTTPError) -> Exception:
        body = e.read().decode("utf-8", "replace")[:500]
        if "context" in body.lower() and ("exceed" in body.lower() or "too long" in body.lower()):
            return ModelContextWindowExceededError("llama-server", body)
        return ModelAPIError("llama-server", f"HTTP {e.code}: {body}")


class _PortTaken(Exception):
    pass
