"""The llama-server child's lifecycle against a fake server: start and health check, a port taken meanwhile, a
server that dies mid-run, stop, and death with its parent on Ctrl-C or kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelAPIError

from l2mac.errors import ConfigError
from l2mac.models.local.server import LlamaServer, find_server, fitting_slots, kv_bytes_per_token

FAKE = Path(__file__).with_name("fake_llama_server.py")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FAKE_LLAMA_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    exe = tmp_path / "llama-server"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(0o755)
    return exe


def server(binary: Path, state: Path, **kw: object) -> LlamaServer:
    return LlamaServer(binary, state / "model.gguf", 4096, log_path=state / "server.log", startup_timeout_s=20, **kw)  # type: ignore[arg-type]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return status != "Z"


def wait_gone(pid: int, timeout: float = 10) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def pids(state: Path) -> list[int]:
    return [int(p) for p in (state / "pids").read_text().split()]


def test_it_starts_waits_for_the_model_to_load_answers_and_stops(binary: Path, state: Path) -> None:
    (state / "loading").write_text("3")  # /health says 503 three times while "loading"
    s = server(binary, state, slots=2)
    s.start()
    try:
        answer = s.complete({"prompt": [1, 2, 3], "n_predict": 8, "cache_prompt": True}, timeout_s=10)
        assert answer["content"] == "seen 3 tokens" and answer["timings"]["predicted_n"] == 2
        cmd = s.command(s.port)
        assert cmd[cmd.index("--parallel") + 1] == "2" and cmd[cmd.index("--ctx-size") + 1] == "8192"
        assert cmd[cmd.index("--host") + 1] == "127.0.0.1"  # loopback only
    finally:
        s.stop()
    assert wait_gone(pids(state)[0]) and not s.alive()
    s.stop()  # twice is harmless


def test_a_port_taken_meanwhile_is_retried_on_another(binary: Path, state: Path) -> None:
    (state / "bind-fail-once").touch()
    s = server(binary, state)
    s.start()
    try:
        assert len(pids(state)) == 2 and s.complete({"prompt": [1]}, timeout_s=10)["content"] == "seen 1 tokens"
    finally:
        s.stop()


def test_a_server_that_cannot_start_is_a_clear_error_with_its_log(tmp_path: Path, state: Path) -> None:
    broken = tmp_path / "broken-server"
    broken.write_text("#!/bin/sh\necho 'error: unknown model architecture: qwen9' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(ModelAPIError, match=r"exited with code 1 while starting.*unknown model architecture"):
        server(broken, state).start()
    with pytest.raises(ConfigError, match="llama-server not found"):
        find_server(str(tmp_path / "nowhere"))


def test_a_server_that_dies_mid_run_is_restarted_and_the_request_repeated(binary: Path, state: Path) -> None:
    (state / "die-after").write_text("1")  # each server process dies on its second request, unanswered
    s = server(binary, state)
    s.start()
    try:
        assert s.complete({"prompt": [1]}, timeout_s=10)["content"] == "seen 1 tokens"
        assert s.complete({"prompt": [1, 2]}, timeout_s=10)["content"] == "seen 2 tokens"
        assert s.restarts == 1 and len(pids(state)) == 2 and not alive(pids(state)[0])
        assert "restarted" in (state / "server.log").read_text()
    finally:
        s.stop()


def test_concurrent_requests_are_in_flight_together(binary: Path, state: Path) -> None:
    (state / "latency").write_text("0.5")
    s = server(binary, state, slots=4)
    s.start()
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda n: s.complete({"prompt": [0] * n}, timeout_s=10), range(1, 5)))
        assert (state / "max_in_flight").read_text() == "4"
        sent = [json.loads(line) for line in (state / "requests.jsonl").read_text().splitlines()]
        assert sorted(len(r["prompt"]) for r in sent) == [1, 2, 3, 4]
    finally:
        s.stop()


CHILD = """
import signal, sys, time
from pathlib import Path
# as a terminal delivers Ctrl-C, even when this test runs in a job started with SIGINT ignored (nohup ... &)
signal.signal(signal.SIGINT, signal.default_int_handler)
from l2mac.models.local.server import LlamaServer
s = LlamaServer(Path(sys.argv[1]), Path("m.gguf"), 1024, startup_timeout_s=20)
s.start()
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_the_server_dies_with_l2mac_on_ctrl_c_and_kill_9(binary: Path, state: Path, sig: signal.Signals) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(binary)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        server_pid = pids(state)[0]
        assert alive(server_pid)
        child.send_signal(sig)
        child.wait(timeout=10)
        assert wait_gone(server_pid), "the llama-server child outlived l2mac"
    finally:
        child.kill()


def test_a_configured_server_that_is_not_there_is_refused_before_any_model_loads(tmp_path: Path) -> None:
    from l2mac.models.registry import build_model
    from l2mac.settings import load_settings

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    env = {"L2MAC_LLAMA_SERVER": str(tmp_path / "no-such-server"), "PATH": "/usr/bin"}
    settings = load_settings(config_path=tmp_path / "none.yaml", environ=env, llm={"model": f"gguf:{gguf}"})
    assert settings.llm.llama_server == str(tmp_path / "no-such-server") and settings.llm.local_slots == 4
    with pytest.raises(ConfigError, match="llama-server not found"):
        build_model(settings.llm, env)


def test_the_local_model_sends_its_rendered_prompt_to_the_server_and_requests_overlap(
    binary: Path, state: Path
) -> None:
    import asyncio

    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from test_local_model import _BrokenLlama, _chat_with

    from l2mac.models.client import ModelClient

    (state / "latency").write_text("0.5")
    chat = _chat_with(_BrokenLlama())  # tokenizes only: generation goes to the server
    chat.served = server(binary, state, slots=3)
    chat.served.start()
    client = ModelClient(chat.as_model("local:m"))

    async def three() -> list[str]:
        asks = [client.request([ModelRequest(parts=[UserPromptPart("x" * 40 * n)])], purpose="t") for n in (1, 2, 3)]
        return [r.text or "" for r in await asyncio.gather(*asks)]

    try:
        assert sorted(asyncio.run(three())) == ["seen 10 tokens", "seen 20 tokens", "seen 30 tokens"]
    finally:
        chat.close()
    assert (state / "max_in_flight").read_text() == "3"  # no lock held while the server generates
    sent = json.loads((state / "requests.jsonl").read_text().splitlines()[0])
    assert sent["cache_prompt"] is True and sent["stop"] == ["<|im_end|>", "<|endoftext|>"]
    assert chat.stats[0].completion_tokens == 2 and not chat.served.alive()


def test_a_streamed_answer_is_cut_when_the_client_says_stop_and_the_server_is_hung_up_on(
    binary: Path, state: Path
) -> None:
    (state / "loop").write_text("    assert f(1) == 1")
    s = server(binary, state)
    s.start()
    seen: list[str] = []
    try:
        answer = s.complete({"prompt": [1]}, timeout_s=10, stop_when=lambda piece: len(seen.append(piece) or seen) > 20)
        assert answer["stopped_by_client"] is True and answer["content"].startswith("solution.py\n```python\n")
        assert answer["content"].count("assert f(1) == 1") == 20
        end = time.monotonic() + 10
        while not (state / "hung-up").exists() and time.monotonic() < end:
            time.sleep(0.05)
        assert (state / "hung-up").exists(), "the server kept generating for a client that had stopped"
        (state / "loop").unlink()
        assert s.complete({"prompt": [1, 2]}, timeout_s=10, stop_when=lambda piece: False)["content"] == "seen 2 tokens"
    finally:
        s.stop()


def test_the_local_model_cuts_a_looping_answer_keeps_what_came_before_and_says_so(binary: Path, state: Path) -> None:
    from pydantic_ai.messages import ModelRequest, UserPromptPart
    from test_local_model import _BrokenLlama, _chat_with

    from l2mac.models.client import CallRecord, ModelClient

    (state / "loop").write_text("    assert separate([1]) == [1]")
    (state / "cached").write_text("1")  # the stream is stopped before its final event: the cache is said earlier
    chat = _chat_with(_BrokenLlama())
    chat.served = server(binary, state)
    chat.served.start()
    calls: list[CallRecord] = []
    client = ModelClient(chat.as_model("local:m"), on_call=calls.append)
    try:
        import asyncio

        response = asyncio.run(client.request([ModelRequest(parts=[UserPromptPart("write it")])], purpose="t"))
    finally:
        chat.close()
    assert response.text == "solution.py\n```python\n    assert separate([1]) == [1]\n```"
    assert chat.stats[0].loop_cut and calls[0].finish == "loop_cut"
    assert response.usage.cache_read_tokens == 1 and client.usage.cache_read_tokens == 1


def test_a_closed_server_is_not_started_again_so_l2mac_can_exit(binary: Path, state: Path) -> None:
    (state / "latency").write_text("1")
    s = server(binary, state)
    s.start()
    with ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(s.complete, {"prompt": [1]}, 10)
        time.sleep(0.3)
        s.close()  # as on Ctrl-C, while a request is in flight
        with pytest.raises(ModelAPIError):
            in_flight.result()
    with pytest.raises(ModelAPIError, match="stopped"):
        s.complete({"prompt": [1]}, timeout_s=10)
    assert s.restarts == 0 and len(pids(state)) == 1 and not s.alive()


def test_the_slots_are_as_many_as_their_kv_cache_fits_in_half_the_memory() -> None:
    """12 slots of 16,384 tokens of Qwen2.5-Coder-1.5B take 5.25 GiB at start; on a small machine fewer are made."""
    qwen = {
        "general.architecture": "qwen2",
        "qwen2.block_count": "28",
        "qwen2.attention.head_count": "12",
        "qwen2.attention.head_count_kv": "2",
        "qwen2.embedding_length": "1536",
    }
    per_token = kv_bytes_per_token(qwen)
    assert per_token == 28 * 2 * 128 * 2 * 2  # 28 KiB: layers, KV heads, head size, keys and values, f16
    gib = 1024**3
    assert fitting_slots(12, 16384, per_token, 24 * gib) == 12
    assert fitting_slots(32, 16384, per_token, 16 * gib) == 18  # 8 GiB of 16 for the cache
    assert fitting_slots(4, 16384, per_token, gib // 4) == 1  # at least one
    assert fitting_slots(12, 16384, kv_bytes_per_token({"general.architecture": "x"}), gib) == 12  # unknown: as asked


def test_a_run_gives_its_llama_server_a_slot_for_each_call_it_may_have_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """soa with --concurrency 6 on a server with the default 4 slots: two calls would wait, and take over the
    slots of calls that were stopped to be continued."""
    from l2mac.models.local import llama
    from l2mac.run import resolve_model
    from l2mac.settings import load_settings

    made: list[int] = []

    class Chat:
        context_window = 16384

        def __init__(self, path: Path, **options: Any) -> None:
            made.append(options["slots"])

        def as_model(self, name: str) -> Any:
            return None

        def close(self) -> None:
            pass

    monkeypatch.setattr(llama, "LocalChat", Chat)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    llm = {"model": f"gguf:{gguf}", "llama_server": sys.executable}
    for concurrency in (6, 2):
        settings = load_settings(
            config_path=tmp_path / "none.yaml", environ={}, llm=llm, run={"concurrency": concurrency}
        )
        resolve_model(settings, None)
    assert made == [6, 4]  # never fewer than the configured local_slots (4)
