"""How self-organised agents scale, with a fake model that plays a team building a tree of functions.

    .venv/bin/python bench/soa_scaling.py [--branching 10] [--depths 1,2,3] [--latency 0.05]

The lead designs one module with B stub functions; every agent at depth < D splits its function into B helper
stubs (one agent each), the agents at depth D implement theirs. So a run has B + B^2 + ... + B^D functions.
Measured: agents, functions, LOC, tokens per agent (mean and max, children only) against total tokens; and wall
time with concurrency 1 against 8 when every call takes a fixed latency. Writes bench/results/soa-scaling-*.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from l2mac.checks.runner import SubprocessRunner
from l2mac.models.scripted import last_user_text
from l2mac.run import run_l2mac
from l2mac.settings import load_settings

RESULTS = Path(__file__).parent / "results"


def tree_team(branching: int, depth: int, latency: float) -> FunctionModel:
    def stub(name: str) -> str:
        return f'def {name}() -> int:\n    """Part {name} of the total."""\n    ...\n'

    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(latency)
        tools = [t.name for t in info.function_tools]
        if "write_skeleton" in tools:
            code = "\n\n".join(stub(f"f_{i}") for i in range(branching))
            tests = "from tree.parts import f_0\n\n\ndef test_f_0():\n    assert f_0() > 0\n"
            args: dict[str, Any] = {
                "modules": [{"path": "tree/__init__.py", "code": ""}, {"path": "tree/parts.py", "code": code}],
                "tests": tests,
            }
            return ModelResponse(parts=[ToolCallPart("write_skeleton", json.dumps(args))])
        m = re.search(r"Implement this function:\n```python\ndef (\w+)\(", last_user_text(messages))
        assert m, "an agent request without a contract"
        name = m.group(1)
        level = name.count("_")
        if level < depth:
            helpers = [f"{name}_{i}" for i in range(branching)]
            body = " + ".join(f"{h}()" for h in helpers)
            code = f'def {name}() -> int:\n    """Part {name} of the total."""\n    return {body}\n\n\n'
            code += "\n\n".join(stub(h) for h in helpers)
        else:
            code = f'def {name}() -> int:\n    """Part {name} of the total."""\n    return 1\n'
        return ModelResponse(parts=[ToolCallPart("write_function", json.dumps({"code": code}))])

    return FunctionModel(answer, model_name="tree-team")


def run_once(branching: int, depth: int, latency: float, concurrency: int) -> dict[str, Any]:
    workspace = Path(tempfile.mkdtemp(prefix="soa-scaling-"))
    settings = load_settings(
        config_path=workspace / "none.yaml",
        environ={},
        llm={"context_window": 32000},
        run={
            "workspace": workspace,
            "project_name": f"tree-b{branching}-d{depth}",
            "strategy": "soa",
            "max_agents": 100_000,
            "max_depth": depth,
            "concurrency": concurrency,
            "sandbox": "subprocess",
        },
    )
    start = time.monotonic()
    result = run_l2mac(
        "a tree of functions", settings, model=tree_team(branching, depth, latency), runner=SubprocessRunner()
    )
    wall = time.monotonic() - start
    log = [json.loads(line) for line in (result.workspace / ".l2mac" / "log.jsonl").read_text().splitlines()]
    calls = [e for e in log if e["kind"] == "model_call"]
    per_agent: dict[str, int] = {}
    for c in calls:
        per_agent[c["purpose"]] = per_agent.get(c["purpose"], 0) + c["input_tokens"] + c["output_tokens"]
    children = [v for k, v in per_agent.items() if k != "agent 0"]
    functions = sum(1 for line in result.files["tree/parts.py"].splitlines() if line.startswith("def "))
    return {
        "branching": branching,
        "depth": depth,
        "concurrency": concurrency,
        "latency_s": latency,
        "status": result.report.status,
        "agents": len(result.outcomes),
        "functions": functions,
        "loc": result.report.loc,
        "tokens_total": result.report.tokens.total,
        "tokens_lead": per_agent.get("agent 0", 0),
        "tokens_per_child_mean": round(sum(children) / len(children), 1) if children else 0,
        "tokens_per_child_max": max(children) if children else 0,
        "wall_time_s": round(wall, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--branching", type=int, default=10)
    ap.add_argument("--depths", default="1,2,3")
    ap.add_argument("--latency", type=float, default=0.3, help="seconds per fake call (wall-time comparison)")
    args = ap.parse_args()
    rows = []
    for d in (int(x) for x in args.depths.split(",")):
        rows.append(run_once(args.branching, d, 0.0, 8))
        print(json.dumps(rows[-1]), flush=True)
    timing = []
    for concurrency in (1, 8):
        timing.append(run_once(args.branching, 2, args.latency, concurrency))
        print(json.dumps(timing[-1]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    target = RESULTS / f"soa-scaling-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json"
    target.write_text(json.dumps({"size": rows, "concurrency": timing}, indent=2) + "\n")
    print(f"written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
