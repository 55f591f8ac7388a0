"""The embedded model run by llama.cpp, behind pydantic-ai's model interface: in-process by default, or by a
managed ``llama-server`` child with parallel slots (``server``; see ``server.py``) when agents run concurrently.

In-process rather than llama-cpp-python's HTTP server: that server answers HTTP 500 to an assistant message
whose content is null beside tool_calls (what pydantic-ai sends after a tool call), and in-process also keeps
the repeated prompt prefix in the KV cache between the turns of a step, with no child process to manage.

The prompt is rendered with the chat template stored in the GGUF file, so the model sees tools and tool results
in the exact format it was trained on (``chat_format``); tool calls are parsed back from its ``<tool_call>`` blocks.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic_ai.exceptions import ModelAPIError, ModelContextWindowExceededError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from l2mac.errors import ConfigError
from l2mac.fenced import BlockEnd, in_markdown
from l2mac.models.local.chat_format import answer_begun, openai_messages, parse_reply, tool_schemas
from l2mac.models.local.given import continue_with_given, given_text
from l2mac.models.local.loops import LoopGuard
from l2mac.models.local.server import LlamaServer, fitting_slots, kv_bytes_per_token, physical_memory

DEFAULT_CONTEXT_CAP = 16_384
#: one answer at most this long: a whole small file fits; a runaway answer costs minutes at ~17 tokens/s
MAX_ANSWER_TOKENS = 2048
REPEAT_PENALTY = 1.1
END_OF_TURN = ("<|im_end|>", "<|endoftext|>")
#: where a begun answer (one file's code block) ends
CLOSING_FENCE = "\n```"
#: a request to the llama-server child may take many minutes (a 16k-token prompt at ~95 tokens/s, then 2,048
#: tokens at 5-10 tokens/s per slot while other slots decode); a dead server is seen by its process, not a timeout
SERVED_REQUEST_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class GenerationStats:
    prompt_tokens: int
    new_prompt_tokens: int
    completion_tokens: int
    prompt_s: float
    total_s: float
    loop_cut: bool = False  # the answer fell into a loop and was cut there (see loops.LoopGuard)
    hit_limit: bool = False  # the answer reached its token limit: it is most likely cut off
    watched: bool = False  # stopped where a watch said (see given.GivenWatch)


@dataclass
class LocalChat:
    """A llama.cpp model answering chat requests; one at a time (the model is not thread-safe)."""

    path: Path
    context_cap: int = DEFAULT_CONTEXT_CAP
    temperature: float = 0.2
    seed: int = 0
    threads: int | None = None
    server: Path | None = None  # a llama-server binary: generate there, with ``slots`` requests in parallel
    slots: int = 4
    server_log: Path | None = None
    request_timeout_s: float = SERVED_REQUEST_TIMEOUT_S
    stats: list[GenerationStats] = field(default_factory=list)
    served: LlamaServer | None = field(default=None, init=False, repr=False)
    # one seed per request, taken as it starts: concurrent requests (agents, samples) must not share one
    requests: Iterator[int] = field(default_factory=itertools.count, init=False, repr=False)

    def __post_init__(self) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as e:
            raise ConfigError(
                "the embedded model needs llama-cpp-python: pip install 'l2mac[local]' "
                "(or run `python3 bootstrap.py run ...`, which installs it)"
            ) from e
        import jinja2.sandbox

        threads = self.threads or os.cpu_count() or 2
        if self.server is not None:  # the weights go to the server; here only the vocabulary and metadata
            self.llm = Llama(model_path=str(self.path), vocab_only=True, verbose=False)
            self.context_window = min(self.context_cap, _trained_context(self.llm) or self.context_cap)
            per_token = kv_bytes_per_token(self.llm.metadata)
            slots = fitting_slots(self.slots, self.context_window, per_token, physical_memory())
            if slots < self.slots:
                print(
                    f"l2mac: llama-server gets {slots} slots, not {self.slots}: the KV cache of more would take over "
                    f"half of this machine's memory ({self.context_window:,} tokens per slot)",
                    file=sys.stderr,
                )
            self.served = LlamaServer(
                self.server, self.path, self.context_window, slots, self.threads, log_path=self.server_log
            )
        else:
            self.llm = Llama(
                model_path=str(self.path), n_ctx=self.context_cap, n_threads=threads, seed=self.seed, verbose=False
            )
            trained = _trained_context(self.llm)
            if 0 < trained < self.context_cap:  # never ask for more context than the model was trained with
                self.llm.close()
                self.llm = Llama(
                    model_path=str(self.path), n_ctx=trained, n_threads=threads, seed=self.seed, verbose=False
                )
            self.context_window = self.llm.n_ctx()
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ConfigError(f"{self.path} has no chat template in its metadata; use a chat (instruct) GGUF model")
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.filters["tojson"] = lambda v: json.dumps(v, ensure_ascii=False)
        self.template = env.from_string(template)
        self.lock = threading.Lock()
        if self.served is not None:
            self.served.start()

    def render(self, messages: list[ModelMessage], tools: list[ToolDefinition]) -> str:
        """The prompt, from the model's chat template. When the messages end with an answer begun for the model
        (a response of text only), the model continues it: the prompt ends with that text, inside its turn."""
        begun = answer_begun(messages)
        if begun is not None:
            messages = messages[:-1]
        prompt = str(
            self.template.render(
                messages=openai_messages(messages), tools=tool_schemas(tools) or None, add_generation_prompt=True
            )
        )
        return prompt + (begun or "")

    def _tokens(self, prompt: str) -> tuple[list[int], int]:
        """The prompt's tokens and the room left for the answer; a prompt that leaves none is refused."""
        tokens = self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        room = self.context_window - len(tokens)
        if room < 16:
            raise ModelContextWindowExceededError(
                self.path.name, f"prompt of {len(tokens)} tokens does not fit the {self.context_window} window"
            )
        return tokens, room

    def complete(
        self,
        prompt: str,
        max_tokens: int,
        temperature: float | None = None,
        stop: tuple[str, ...] = (),
        given: Mapping[str, str] | None = None,
        watch: Callable[[str], bool] | None = None,
    ) -> tuple[str, GenerationStats]:
        """The model's answer to ``prompt``; it stops at the end of its turn, at any of ``stop``, or where ``watch``
        (told each piece) says. Where it begins one of the ``given`` definitions, their text is put in and it goes
        on (see :mod:`given`)."""
        if not given:
            text, stats = self._generate(prompt, max_tokens, temperature, stop, watch)
            self.stats.append(stats)
            return text, stats

        def generate(p: str, limit: int, watch: Callable[[str], bool]) -> tuple[str, GenerationStats, int, bool]:
            text, stats = self._generate(p, limit, temperature, stop, watch)
            return text, stats, stats.completion_tokens, not (stats.loop_cut or stats.hit_limit or stats.watched)

        text, parts, _ = continue_with_given(generate, prompt, max_tokens, given)
        written_before = sum(s.completion_tokens for s in parts[:-1])
        written = sum(s.completion_tokens for s in parts)
        stats = GenerationStats(
            # read: the prompt and the text given (the last prompt holds both, and what was written before it)
            max(parts[0].prompt_tokens, parts[-1].prompt_tokens - written_before),
            sum(s.new_prompt_tokens for s in parts),
            written,
            sum(s.prompt_s for s in parts),
            sum(s.total_s for s in parts),
            parts[-1].loop_cut,
            # the limit spent across the generations (the last one may have ended where a given stub began)
            parts[-1].hit_limit or written >= max_tokens,
        )
        self.stats.append(stats)
        return text, stats

    def _generate(
        self,
        prompt: str,
        max_tokens: int,
        temperature: float | None,
        stop: tuple[str, ...],
        watch: Callable[[str], bool] | None = None,
    ) -> tuple[str, GenerationStats]:
        """One generation, stopped also when ``watch`` (told each piece) returns True."""
        if self.served is not None:
            return self._complete_served(prompt, max_tokens, temperature, stop, watch)
        with self.lock:
            tokens, room = self._tokens(prompt)
            cached = _common_prefix(list(self.llm._input_ids), tokens)
            start = time.monotonic()
            first: float | None = None
            n_out = 0
            limit = min(max_tokens, room, MAX_ANSWER_TOKENS)
            stream = self.llm.create_completion(
                tokens,
                max_tokens=limit,
                temperature=self.temperature if temperature is None else temperature,
                top_p=0.95,
                repeat_penalty=REPEAT_PENALTY,  # a 1.5B model otherwise loops (seen: 4,096 tokens of asserts)
                stop=[*END_OF_TURN, *stop],
                stream=True,
                seed=self.seed + next(self.requests),  # reproducible runs, yet a retried prompt may differ
            )
            guard = LoopGuard()
            chunks = cast(Iterator[dict[str, Any]], stream)
            watched = False
            for chunk in chunks:
                if first is None:
                    first = time.monotonic()
                n_out += 1
                piece = chunk["choices"][0]["text"]
                if guard.feed(piece):
                    break  # the answer is looping: stop generating, keep what came before the loop
                if watch is not None and watch(piece):
                    watched = True
                    break
            close = getattr(chunks, "close", None)
            if close is not None:
                close()  # a generator left open would finish its bookkeeping whenever it is collected
            end = time.monotonic()
        stats = GenerationStats(
            len(tokens),
            len(tokens) - cached,
            n_out,
            (first or end) - start,
            end - start,
            guard.looped,
            not guard.looped and not watched and n_out >= limit,
            watched,
        )
        return guard.trimmed(), stats

    def _complete_served(
        self,
        prompt: str,
        max_tokens: int,
        temperature: float | None,
        stop: tuple[str, ...],
        watch: Callable[[str], bool] | None = None,
    ) -> tuple[str, GenerationStats]:
        """The same request to the llama-server child: no lock, the server batches concurrent requests."""
        assert self.served is not None
        with self.lock:  # tokenizing is quick; the vocabulary object is not documented as thread-safe
            tokens, room = self._tokens(prompt)
        limit = min(max_tokens, room, MAX_ANSWER_TOKENS)
        payload = {
            "prompt": tokens,
            "n_predict": limit,
            "temperature": self.temperature if temperature is None else temperature,
            "top_p": 0.95,
            "repeat_penalty": REPEAT_PENALTY,
            "stop": [*END_OF_TURN, *stop],
            "cache_prompt": True,  # a slot keeps its prompt's KV: the next turn of a step reuses the prefix
            "seed": self.seed + next(self.requests),
        }
        guard = LoopGuard()
        start = time.monotonic()

        def stop_when(piece: str) -> bool:
            looped = guard.feed(piece)
            return looped or (watch is not None and watch(piece))

        data = self.served.complete(payload, self.request_timeout_s, stop_when=stop_when)
        timings = data.get("timings") or {}  # absent when the stream was cut: then measured here
        prompt_s = float(timings.get("prompt_ms", 0.0)) / 1000
        n_out = int(timings.get("predicted_n", data.get("tokens_predicted", 0)))
        progress = data.get("prompt_progress") or {}  # a stream l2mac stopped: no timings, but what was cached
        stats = GenerationStats(
            len(tokens),
            int(timings.get("prompt_n", len(tokens) - int(progress.get("cache", 0)))),
            n_out,
            prompt_s,
            prompt_s + float(timings["predicted_ms"]) / 1000 if timings else time.monotonic() - start,
            guard.looped,
            not guard.looped and not data.get("stopped_by_client") and n_out >= limit,
            bool(data.get("stopped_by_client")) and not guard.looped,
        )
        return guard.trimmed() if guard.looped else str(data.get("content", "")), stats

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tools = list(info.function_tools)
        settings = info.model_settings or {}
        max_tokens = int(settings.get("max_tokens", 2048))
        temperature = settings.get("temperature")
        prompt = self.render(messages, tools)
        prefill = answer_begun(messages)
        begun = prefill is not None
        given = given_text(settings) if begun else None
        # a Markdown block's own examples have fences: only the one that closes the block ends it
        ends = BlockEnd() if prefill is not None and in_markdown(prefill) else None
        try:
            # a begun answer is one file's code block: it ends where the block closes (the model went on to
            # write tests and prose after it, 335 tokens where the body took 40)
            stop = (CLOSING_FENCE,) if begun and ends is None else ()
            text, stats = self.complete(
                prompt,
                max_tokens,
                None if temperature is None else float(temperature),
                stop,
                given,
                ends.feed if ends is not None else None,
            )
            if ends is not None and ends.cut is not None:
                text = text[: ends.cut].rstrip("\n")  # the closing fence is left out, as a stop leaves it
        except ModelAPIError:
            raise  # e.g. the context window is exceeded: the control unit handles it
        except (RuntimeError, ValueError, OSError) as e:  # llama.cpp failed (e.g. decode error, out of memory)
            raise ModelAPIError(self.path.name, f"the local model failed: {type(e).__name__}: {e}") from e
        return ModelResponse(
            # a begun answer is continued as it is: its first line's indentation is part of the code
            parts=[TextPart(text)] if begun and text else list(parse_reply(text, {t.name for t in tools})),
            usage=RequestUsage(
                input_tokens=stats.prompt_tokens,
                cache_read_tokens=max(0, stats.prompt_tokens - stats.new_prompt_tokens),
                output_tokens=stats.completion_tokens,
            ),
            finish_reason="length" if stats.hit_limit else "stop",
            # how long reading the prompt took (the rest was generation): the run report's timeline shows both
            provider_details={"prompt_s": round(stats.prompt_s, 3), **({"loop_cut": True} if stats.loop_cut else {})},
        )

    def close(self) -> None:
        """Free the model's memory now (about 1.2 GB), rather than whenever the garbage collector gets to it,
        and stop the llama-server child if there is one."""
        if self.served is not None:
            self.served.close()
        with self.lock:
            self.llm.close()

    def as_model(self, name: str) -> LocalModel:
        return LocalModel(self, model_name=name, parallel=self.server is not None)


class LocalModel(FunctionModel):
    """The embedded model as a pydantic-ai model, saying what it can do: it continues an answer a request begins
    (the prompt is rendered here), and it answers requests at once only when a llama-server serves it."""

    continues = True

    def __init__(self, chat: LocalChat, *, model_name: str, parallel: bool) -> None:
        super().__init__(chat, model_name=model_name)
        self.parallel = parallel


def _trained_context(llm: Any) -> int:
    meta = llm.metadata
    return int(meta.get(f"{meta.get('general.architecture', 'llama')}.context_length", 0))


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
