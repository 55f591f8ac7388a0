"""``l2mac bench``: measure generation quality with the same model across strategies."""

from __future__ import annotations

import functools
import gzip
import json
import shlex
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from l2mac.benchmarks.runner import HasTaskId, Scorer, Suite
from l2mac.benchmarks.setup import ModelSpec, bench_model, results_meta, suite_worker
from l2mac.errors import L2MACError
from l2mac.settings import load_settings, server_slots
from l2mac.terminal import make_console, print_error

bench_app = typer.Typer(
    no_args_is_help=True,
    help="Benchmarks: HumanEval+ (functions), ClassEval (classes), DevBench (repositories), system designs.",
)


_Task = TypeVar("_Task", bound=HasTaskId)

#: the options every function- and class-level benchmark takes
StrategyOpt = Annotated[str, typer.Option(help="single (one call, no tools), l2mac (the engine) or soa (agents).")]
LimitOpt = Annotated[int | None, typer.Option(help="Only the first N tasks.", min=1)]
ModelOpt = Annotated[str | None, typer.Option(help="Model (default: as configured; else the local model).")]
BaseUrlOpt = Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")]
LlamaServerOpt = Annotated[
    str | None, typer.Option(help="Serve the local model from this llama.cpp llama-server, in parallel slots.")
]
SeedOpt = Annotated[int | None, typer.Option(help="Sampling seed, where the model supports one.")]
TaskTokensOpt = Annotated[int, typer.Option(help="Token budget per task (every strategy).")]
WorkersOpt = Annotated[
    int, typer.Option(help="Tasks generated at once (threads: sharing --llama-server's slots; ray: actors).", min=1)
]
OutOpt = Annotated[Path | None, typer.Option(help="Results file (default: bench/results/<date>-...json).")]
AnswersFromOpt = Annotated[
    Path | None,
    typer.Option(
        help="An earlier engine run's workspace (its folder of task projects, which its results file names): each "
        "task reuses its project's answers to the same requests, so what a change does shows on the same runs.",
        exists=True,
        file_okay=False,
    ),
]


ExecutorOpt = Annotated[
    str, typer.Option(help="Where tasks run: threads (this process) or ray (Ray actors; pip install 'l2mac\\[ray]').")
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(help="Run on the Ray cluster at this address (implies --executor ray; without it, a local instance)."),
]
CpusOpt = Annotated[float, typer.Option(help="CPUs each Ray worker asks for (its local model's threads).", min=0.1)]
SlotsOpt = Annotated[
    int,
    typer.Option(
        help="Tasks each Ray worker does at once, sharing its model (its llama-server has a slot for each call they "
        "may have in flight).",
        min=1,
    ),
]


@dataclass(frozen=True)
class Generating:
    """How the tasks are generated: the options every task-level benchmark takes."""

    strategy: str
    model: str | None
    base_url: str | None
    llama_server: str | None
    seed: int | None
    task_tokens: int
    workers: int
    out: Path | None
    executor: str = "threads"
    ray_address: str | None = None
    cpus_per_worker: float = 1.0
    slots_per_worker: int = 1
    answers_from: Path | None = None

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> Generating:
        """From a command's options (its ``locals()``), which bear these names (a command may lack those with a
        default)."""
        return cls(**{f.name: options[f.name] for f in fields(cls) if f.name in options})


def run_suite(
    suite: Suite[_Task],
    how: Generating,
    prepare: Callable[[], tuple[Sequence[_Task], str, Scorer]],
    scorer_note: str | None = None,
) -> None:
    """Run a benchmark's tasks (from ``prepare``: the tasks chosen, their data's digest, and the scorer, made
    before the model loads so a scorer that cannot be set up costs nothing) and print its summary line.

    In this process the workers are threads sharing one model (one llama-server, with the slots
    :func:`server_slots` gives ``workers`` tasks); on Ray each worker loads its own (its own llama-server, with
    those of ``slots_per_worker`` tasks and its CPUs as threads, or the shared ``--base-url`` endpoint)."""
    from l2mac.benchmarks import runner
    from l2mac.executors import make_executor
    from l2mac.executors.threads import ThreadExecutor

    console = make_console()
    try:
        if how.strategy not in runner.STRATEGIES:
            raise typer.BadParameter(f"--strategy must be one of {', '.join(runner.STRATEGIES)}")
        if how.answers_from is not None and how.strategy not in runner.ENGINE_STRATEGIES:
            raise typer.BadParameter("--answers-from reuses an engine run's answers: give --strategy l2mac or soa")
        earlier = how.answers_from.resolve() if how.answers_from is not None else None  # as workers elsewhere see it
        executor = make_executor(
            how.executor,
            how.workers,
            address=how.ray_address,
            cpus_per_worker=how.cpus_per_worker,
            slots_per_worker=how.slots_per_worker,
        )
        tasks, data_md5, score = prepare()
        local = isinstance(executor, ThreadExecutor)
        spec = ModelSpec(
            how.model,
            how.base_url,
            how.seed,
            how.task_tokens,
            how.llama_server,
            slots=server_slots(
                how.workers if local else how.slots_per_worker, load_settings(run=suite.engine_budget).run
            ),
            run={**suite.engine_budget, **({"answers_from": str(earlier)} if earlier else {})},
            threads=None if local else max(1, round(how.cpus_per_worker)),
        )
        label = spec.label()
        # a run reusing answers is a measurement of a change, never the live run of the same day's file
        named = how.strategy + ("-answers-from" if earlier else "")
        target = how.out or runner.results_path(Path("bench/results"), suite.name, label, named)
        meta = results_meta(suite.title, data_md5, spec, how.strategy, suite.engine_budget, executor)
        meta["answers_from"] = str(earlier) if earlier else None
        if scorer_note:
            meta["scorer"] = scorer_note
        workspace = None
        if local and how.strategy in runner.ENGINE_STRATEGIES:  # the task projects, for a later --answers-from
            workspace = Path(tempfile.mkdtemp(prefix=f"l2mac-bench-{how.strategy}-"))
            meta["workspace"] = str(workspace)
            console.print(f"The tasks' projects go to {workspace} (a later run's --answers-from takes this folder)")
        result = runner.run_benchmark(
            tasks,
            strategy=how.strategy,
            start=functools.partial(suite_worker, suite, how.strategy, spec, workspace),
            score=score,
            summarise=suite.summarise,
            unscored=suite.unscored,
            out=target,
            meta=meta,
            say=console.print,
            executor=executor,
        )
        console.print(f"{how.strategy} · {label}: {suite.headline(result['summary'])}. Written to {target}")
    except L2MACError as e:
        print_error(make_console(stderr=True), e)
        raise typer.Exit(2) from None


@bench_app.command("humaneval")
def humaneval_command(
    strategy: StrategyOpt = "single",
    limit: LimitOpt = None,
    tasks: Annotated[str | None, typer.Option(help="Task ids, comma-separated (e.g. 0,1,HumanEval/2).")] = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    llama_server: LlamaServerOpt = None,
    seed: SeedOpt = None,
    task_tokens: TaskTokensOpt = 40_000,
    workers: WorkersOpt = 1,
    executor: ExecutorOpt = "threads",
    ray_address: RayAddressOpt = None,
    cpus_per_worker: CpusOpt = 1.0,
    slots_per_worker: SlotsOpt = 1,
    data: Annotated[Path | None, typer.Option(help="HumanEval+ v0.1.10 .jsonl.gz (default: bench/data).")] = None,
    out: OutOpt = None,
    answers_from: AnswersFromOpt = None,
    self_test: Annotated[
        bool, typer.Option("--self-test", help="Score the canonical solutions (expect the ceiling) and exit.")
    ] = False,
) -> None:
    """HumanEval+ pass@1 (base and plus) of one strategy, scored by evalplus 0.3.1; resumable."""
    from l2mac.benchmarks import humaneval as he
    from l2mac.benchmarks import scorer

    def prepare() -> tuple[list[he.Task], str, Scorer]:
        data_path = data or he.default_data_path()
        all_tasks = he.load_tasks(data_path)
        python = scorer.ensure_scorer()
        runner = scorer.scoring_runner(python)

        def score(solutions: dict[str, str]) -> dict[str, scorer.TaskScore]:
            return scorer.score(solutions, data_path, python=python, runner=runner)

        if self_test:
            with gzip.open(data_path, "rt", encoding="utf-8") as f:
                canon = {r["task_id"]: r["prompt"] + r["canonical_solution"] for r in map(json.loads, f)}
            results = score(canon)
            passed = sum(s.base and s.plus for s in results.values())
            make_console().print(f"canonical solutions: {passed}/{len(results)} pass base and plus ({he.CEILING_NOTE})")
            raise typer.Exit(0 if passed == scorer.CEILING else 1)
        chosen = he.select(all_tasks, limit, tasks.split(",") if tasks else None)
        return chosen, he.DATA_MD5, he.as_fields(score)

    how = Generating.of(locals())
    run_suite(he.SUITE, how, prepare, scorer_note=scorer.EVALPLUS)


@bench_app.command("classeval")
def classeval_command(
    strategy: StrategyOpt = "single",
    limit: LimitOpt = None,
    tasks: Annotated[str | None, typer.Option(help="Task ids, comma-separated (e.g. 0,1,ClassEval_2).")] = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    llama_server: LlamaServerOpt = None,
    seed: SeedOpt = None,
    task_tokens: TaskTokensOpt = 60_000,
    workers: WorkersOpt = 1,
    executor: ExecutorOpt = "threads",
    ray_address: RayAddressOpt = None,
    cpus_per_worker: CpusOpt = 1.0,
    slots_per_worker: SlotsOpt = 1,
    data: Annotated[Path | None, typer.Option(help="ClassEval_dev.json (default: bench/data).")] = None,
    out: OutOpt = None,
    answers_from: AnswersFromOpt = None,
) -> None:
    """ClassEval: classes whose every test passes, and tests passed, of one strategy; resumable."""
    from l2mac.benchmarks import classeval as ce

    def prepare() -> tuple[list[ce.Task], str, Scorer]:
        all_tasks = ce.load_tasks(data or ce.default_data_path())
        chosen = ce.select(all_tasks, limit, tasks.split(",") if tasks else None)
        return chosen, ce.DATA_MD5, ce.default_scorer(all_tasks)

    how = Generating.of(locals())
    run_suite(ce.SUITE, how, prepare, scorer_note=ce.SCORER)


@bench_app.command("devbench")
def devbench_command(
    strategy: StrategyOpt = "single",
    limit: LimitOpt = None,
    tasks: Annotated[str | None, typer.Option(help="Repositories, comma-separated (e.g. ArXiv_digest).")] = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    llama_server: LlamaServerOpt = None,
    seed: SeedOpt = None,
    task_tokens: TaskTokensOpt = 400_000,
    workers: WorkersOpt = 1,
    executor: ExecutorOpt = "threads",
    ray_address: RayAddressOpt = None,
    cpus_per_worker: CpusOpt = 1.0,
    slots_per_worker: SlotsOpt = 1,
    data: Annotated[Path | None, typer.Option(help="DevBench repositories (default: bench/data/devbench).")] = None,
    out: OutOpt = None,
    answers_from: AnswersFromOpt = None,
) -> None:
    """DevBench: hidden acceptance and unit tests passed by the codebase one strategy writes; resumable."""
    from l2mac.benchmarks import devbench as db

    def prepare() -> tuple[list[db.Repo], str, Scorer]:
        repos = db.load_repos(data or db.default_data_path())
        chosen = db.select(repos, limit, tasks.split(",") if tasks else None)
        return chosen, db.data_digest(chosen), db.default_scorer(chosen)

    how = Generating.of(locals())
    run_suite(db.SUITE, how, prepare, scorer_note=db.SCORER)


@bench_app.command("project")
def project_command(
    task: Annotated[str, typer.Option(help="url_shortener, twitter or whatsapp.")] = "url_shortener",
    strategy: Annotated[str, typer.Option(help="single (one call writes the project), l2mac or soa.")] = "single",
    model: Annotated[str | None, typer.Option(help="Generator (default: as configured; else the local model).")] = None,
    base_url: Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")] = None,
    llama_server: Annotated[
        str | None, typer.Option(help="Serve the local model from this llama.cpp llama-server, in parallel slots.")
    ] = None,
    judge: Annotated[str | None, typer.Option(help="Judge model (default: the generator).")] = None,
    repeats: Annotated[int, typer.Option(help="Judge repeats, averaged.", min=1)] = 3,
    task_tokens: Annotated[int, typer.Option(help="Token budget for the generation.")] = 400_000,
    max_wall_time: Annotated[
        float | None, typer.Option(help="Stop the engine's generation after this many seconds (it is still measured).")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Results file (default: bench/results/<date>-...json).")] = None,
) -> None:
    """One of the paper's system-design tasks: files, LOC, syntax errors, own tests, Features % (LLM-judged)."""
    import asyncio
    import json
    import tempfile
    from datetime import datetime, timezone

    from l2mac.benchmarks import projects as pj
    from l2mac.benchmarks import runner as bench_runner
    from l2mac.benchmarks import scorer

    console = make_console()
    stack = ExitStack()  # closes the models (and stops a llama-server child) however the run ends
    try:
        if strategy not in bench_runner.STRATEGIES:
            raise typer.BadParameter(f"--strategy must be one of {', '.join(bench_runner.STRATEGIES)}")
        spec = pj.load_project_task(task)
        bm = bench_model(model, base_url, None, task_tokens, llama_server)
        stack.callback(bm.close)
        settings, label, client_for = bm.settings, bm.label, bm.client_for
        judge_label, judge_client = label, client_for
        if judge:
            judge_bm = bench_model(judge, base_url, None, 10**9)
            stack.callback(judge_bm.close)
            judge_label, judge_client = judge_bm.label, judge_bm.client_for
        workspace = Path(tempfile.mkdtemp(prefix=f"l2mac-{task}-"))
        python = scorer.ensure_scorer()
        runner = scorer.scoring_runner(python)

        def generate(t: pj.ProjectTask) -> Path:
            if strategy == "single":
                return asyncio.run(pj.generate_single_project(client_for(), t, workspace / t.name))
            plan_free = settings.model_copy(
                update={
                    "run": settings.run.model_copy(
                        update={"steps": None, "strategy": strategy, "max_wall_time_s": max_wall_time}
                    )
                }
            )
            return pj.generate_engine_project(t, plan_free, bm.model, workspace)

        result = pj.run_project_benchmark(
            spec,
            generate=generate,
            measure_root=lambda root: pj.measure(root, runner=runner, pylint_python=python),
            judge=pj.judge_with(judge_client, spec, repeats),
        )
        result.update(
            strategy=strategy,
            model=label,
            judge=judge_label,
            machine=bench_runner.machine(),
            l2mac=bench_runner.code_version(),
        )
        result["max_wall_time_s"] = max_wall_time
        result["command"] = "l2mac " + shlex.join(sys.argv[1:])
        day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
        target = out or Path("bench/results") / f"{day}-l2mac-{task}-{label.replace(':', '_')}-{strategy}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        f = result["features"]
        console.print(
            f"{task} · {strategy} · {label}: {result['files']} files, {result['loc']} LOC, pylint E "
            f"{result['pylint_errors']}, ruff {result['ruff_errors']}, tests {result['tests']}, Features % "
            f"(LLM-judged by {judge_label}) {f.get('features_pct')}. Written to {target}"
        )
    except L2MACError as e:
        print_error(make_console(stderr=True), e)
        raise typer.Exit(2) from None
    finally:
        stack.close()
