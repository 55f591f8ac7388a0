"""How a benchmark sweep scales with Ray workers, with a fake model of fixed latency.

    .venv/bin/python bench/ray_scaling.py [--workers 1,2,4] [--tasks 24] [--latency 2.0]

The same HumanEval+ tasks go through the benchmark runner (the ``single`` strategy's code path: a fresh client
per task, the answer parsed, the entry saved as it arrives) on a local Ray instance with 1, 2 and 4 workers,
each worker a Ray actor with its own fake model that answers every call after ``--latency`` seconds. The
sweep's wall time includes starting the actors (their model "loaded" once each); the local instance is started
once, before, and timed on its own. Writes bench/results/ray-scaling-*.json.

The latency is a sleep, not computation, so 4 workers on a 2-core machine measure the executor (hand-out,
streaming results back, saving), not the cores: with a local model each worker needs its CPUs.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from l2mac.benchmarks import humaneval as he
from l2mac.benchmarks.runner import Generation, code_version, machine, run_benchmark
from l2mac.executors import Worker, make_executor
from l2mac.models.client import ModelClient
from l2mac.models.scripted import last_user_text

RESULTS = Path(__file__).parent / "results"


def fixed_latency_worker(latency: float) -> Worker[he.Task, Generation]:
    """A worker whose model answers every call after ``latency`` seconds with a stub of the asked function."""

    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(latency)
        name = last_user_text(messages).split("def ", 1)[1].split("(", 1)[0]
        return ModelResponse(parts=[TextPart(f"```python\ndef {name}(*args):\n    return None\n```")])

    def generate(task: he.Task) -> Generation:
        return asyncio.run(he.generate_single(ModelClient(FunctionModel(answer, model_name="fixed")), task))

    return Worker(generate)


def sweep_once(tasks: list[he.Task], workers: int, latency: float, scratch: Path) -> dict[str, Any]:
    out = scratch / f"sweep-{workers}.json"
    began = time.monotonic()
    data = run_benchmark(
        tasks,
        strategy="single",
        start=functools.partial(fixed_latency_worker, latency),
        score=lambda solutions: {tid: {"base": False, "plus": False} for tid in solutions},
        summarise=he.summarise,
        unscored=he.UNSCORED,
        out=out,
        meta={"data_md5": he.DATA_MD5},
        say=lambda line: None,
        executor=make_executor("ray", workers),
    )
    wall = time.monotonic() - began
    done = sum(1 for t in data["tasks"].values() if not t["error"])
    return {
        "workers": workers,
        "tasks": len(tasks),
        "done": done,
        "latency_s": latency,
        "wall_time_s": round(wall, 2),
        "tasks_per_minute": round(60 * done / wall, 1),
        "ideal_wall_time_s": round(latency * -(-len(tasks) // workers), 2),
    }


def main() -> int:
    import ray

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--latency", type=float, default=2.0)
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    tasks = he.load_tasks(he.default_data_path())[: args.tasks]
    began = time.monotonic()
    ray.init(num_cpus=max(counts), include_dashboard=False, log_to_driver=False)
    ray_start = time.monotonic() - began
    rows = []
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for w in counts:
                rows.append(sweep_once(tasks, w, args.latency, Path(scratch)))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        ray.shutdown()
    base = rows[0]["tasks_per_minute"]
    for r in rows:
        r["speedup"] = round(r["tasks_per_minute"] / base, 2)
    result = {
        "what": "benchmark sweep on Ray workers, fake model of fixed latency (bench/ray_scaling.py)",
        "ray": ray.__version__,
        "ray_start_s": round(ray_start, 2),
        "machine": machine(),
        "l2mac": code_version(),
        "load": os.getloadavg(),
        "command": "python bench/ray_scaling.py " + " ".join(sys.argv[1:]),
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    target = RESULTS / f"ray-scaling-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json"
    target.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
