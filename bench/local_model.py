"""Benchmark of the embedded local model on this machine.

    .venv/bin/python bench/local_model.py                   # speed figures only (about 2 minutes)
    .venv/bin/python bench/local_model.py --demo            # also the demo task end to end (20-60 minutes)
    .venv/bin/python bench/local_model.py --demo-report W/.l2mac/run_report.json   # use a finished demo run
    .venv/bin/python bench/local_model.py --server PATH/llama-server --slots 1,2,4  # parallel slots (~5 min)

Measures prompt processing and generation speed (tokens/s), time to first token, the effect of the KV cache
when the same prefix is sent twice, and (with --demo) wall time and tokens of the README's demo task. Writes
``bench/results/local_model-<UTC time>.json``; the table in bench/README.md is copied from these files.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from l2mac.models.local.catalog import DEFAULT_LOCAL_MODEL, get_spec, models_dir
from l2mac.models.local.llama import GenerationStats, LocalChat

DEMO_TASK = "a command-line todo app (add, list, done, remove) stored in a JSON file, with pytest tests"
RESULTS = Path(__file__).parent / "results"

# A step-sized prompt: a system prompt and a task with some code, about 1,000 tokens.
PREFIX = (
    "<|im_start|>system\nYou are an expert Python programmer. Write complete, working code.<|im_end|>\n"
    "<|im_start|>user\nHere is a module:\n```python\n"
    + "\n".join(f"def f{i}(x: int) -> int:\n    return x * {i} + {i % 7}\n" for i in range(60))
    + "```\n"
)
QUESTION = "Write a pytest test for f3 and f4.<|im_end|>\n<|im_start|>assistant\n"


def _row(s: GenerationStats) -> dict[str, Any]:
    gen_s = max(s.total_s - s.prompt_s, 1e-9)
    return {
        "prompt_tokens": s.prompt_tokens,
        "new_prompt_tokens": s.new_prompt_tokens,
        "completion_tokens": s.completion_tokens,
        "time_to_first_token_s": round(s.prompt_s, 3),
        "total_s": round(s.total_s, 3),
        "prompt_tokens_per_s": round(s.new_prompt_tokens / s.prompt_s, 1) if s.prompt_s > 0 else None,
        "generation_tokens_per_s": round((s.completion_tokens - 1) / gen_s, 1) if s.completion_tokens > 1 else None,
    }


def speed(chat: LocalChat) -> dict[str, Any]:
    chat.llm.reset()  # cold: nothing cached
    _, cold = chat.complete(PREFIX + QUESTION, max_tokens=200, temperature=0.0)
    # the same prefix again, with a different question: only the new tokens are processed
    _, warm = chat.complete(PREFIX + "Write a docstring for f5.<|im_end|>\n<|im_start|>assistant\n", 64, 0.0)
    chat.llm.reset()
    _, again_cold = chat.complete(PREFIX + "Write a docstring for f5.<|im_end|>\n<|im_start|>assistant\n", 64, 0.0)
    return {
        "cold": _row(cold),
        "kv_cache_same_prefix": {
            "warm": _row(warm),
            "cold_same_prompt": _row(again_cold),
            "speedup_time_to_first_token": round(again_cold.prompt_s / max(warm.prompt_s, 1e-9), 1),
        },
    }


def slots(path: Path, server: Path, counts: list[int], tokens: int = 160) -> dict[str, Any]:
    """In-process vs a llama-server child: cold prompt processing (the 1,343-token step-sized prompt), and
    aggregate generation speed with N requests at once (short distinct prompts, so decoding dominates: in
    process they queue on one sequence, on the server they share a batch of N slots)."""
    from concurrent.futures import ThreadPoolExecutor

    def short(k: int) -> str:
        return f"<|im_start|>user\nWrite a long Python module number {k} of small utility functions.<|im_end|>\n" + (
            "<|im_start|>assistant\n"
        )

    def decode(chat: LocalChat, n: int) -> dict[str, Any]:
        start = time.monotonic()
        with ThreadPoolExecutor(n) as pool:
            done = list(pool.map(lambda k: chat.complete(short(k), tokens, 0.0)[1], range(n)))
        wall = time.monotonic() - start
        out = sum(s.completion_tokens for s in done)
        return {"requests": n, "completion_tokens": out, "wall_s": round(wall, 2), "tokens_per_s": round(out / wall, 1)}

    def prompt_speed(chat: LocalChat) -> dict[str, Any]:
        _, cold = chat.complete(PREFIX + QUESTION, 16, 0.0)
        return _row(cold)

    rows: list[dict[str, Any]] = []
    inproc = LocalChat(path)
    rows.append(
        {"mode": "in-process", "cold_prompt": prompt_speed(inproc), "decode": [decode(inproc, n) for n in counts]}
    )
    print(rows[-1], flush=True)
    inproc.close()
    for n in counts:
        chat = LocalChat(
            path, server=server, slots=n, server_log=Path(tempfile.gettempdir()) / "l2mac-llama-server.log"
        )
        try:
            row = {
                "mode": f"llama-server --parallel {n}",
                "cold_prompt": prompt_speed(chat),
                "decode": [decode(chat, n)],
            }
        finally:
            chat.close()
        rows.append(row)
        print(row, flush=True)
    return {"answer_tokens": tokens, "rows": rows}


def demo(report_path: Path | None) -> dict[str, Any]:
    if report_path is None:
        from l2mac.run import run_l2mac
        from l2mac.settings import load_settings

        settings = load_settings(
            llm={"model": f"local:{DEFAULT_LOCAL_MODEL}"}, run={"workspace": Path("workspace") / "bench"}
        )
        start = time.monotonic()
        result = run_l2mac(DEMO_TASK, settings)
        report, wall = result.report.model_dump(mode="json"), time.monotonic() - start
        where = str(result.workspace)
    else:
        report = json.loads(report_path.read_text())
        wall, where = report["wall_time_s"], str(report_path)
    return {
        "task": DEMO_TASK,
        "source": where,
        "status": report["status"],
        "wall_time_s": round(wall, 1),
        "tokens": report["tokens"],
        "steps": {k: report["steps"][k] for k in ("planned", "passed", "failed")},
        "tests": report["tests"],
        "files": report["file_list"],
        "model_calls": report["requests"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--demo", action="store_true", help="also run the demo task end to end")
    ap.add_argument("--demo-report", type=Path, help="take the demo figures from this run_report.json")
    ap.add_argument("--server", type=Path, help="a llama-server binary: measure parallel slots instead")
    ap.add_argument("--slots", default="1,2,4", help="request counts for --server (comma-separated)")
    args = ap.parse_args()
    if args.demo_report is not None and not args.demo_report.is_file():
        print(f"no run report at {args.demo_report}", file=sys.stderr)
        return 2
    path = models_dir() / get_spec(DEFAULT_LOCAL_MODEL).filename
    if not path.exists():
        print(f"model not found at {path}; run `l2mac models pull` first", file=sys.stderr)
        return 1
    if args.server is not None:
        result = {
            "model": DEFAULT_LOCAL_MODEL,
            "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "server": str(args.server),
            **slots(path, args.server, [int(n) for n in args.slots.split(",")]),
        }
        RESULTS.mkdir(exist_ok=True)
        target = RESULTS / f"local_slots-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json"
        target.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written to {target}")
        return 0
    load_start = time.monotonic()
    chat = LocalChat(path)
    out: dict[str, Any] = {
        "model": DEFAULT_LOCAL_MODEL,
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "context_window": chat.context_window,
        "load_s": round(time.monotonic() - load_start, 2),
        "speed": speed(chat),
    }
    del chat
    if args.demo or args.demo_report:
        out["demo"] = demo(args.demo_report)
    RESULTS.mkdir(exist_ok=True)
    target = RESULTS / f"local_model-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    print(f"written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
