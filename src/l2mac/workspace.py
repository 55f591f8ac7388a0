"""The project folder: its name, what a run saves there so it can be resumed (or its answers reused), and
setting an interrupted run's files aside before a replay rebuilds them."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from l2mac.errors import ConfigError, RunError
from l2mac.journal import JOURNAL_FILE, JournaledCall, load_journal
from l2mac.record import RECORD_DIR
from l2mac.settings import LLMSettings, Settings
from l2mac.types import PromptProgram

RUN_FILE = "run.json"


#: what of the model settings makes an answer: an earlier run's answers are reused only with the same
SAME_MODEL = ("model", "base_url", "temperature", "seed")


def earlier_answers(path: Path, llm: LLMSettings) -> list[JournaledCall]:
    """The model calls of the earlier run at ``path`` (its project folder, or its journal file), made with the
    model settings ``llm`` has (when its run file says which)."""
    journal = path / RECORD_DIR / JOURNAL_FILE if path.is_dir() else path
    before, now = _saved_llm(journal.parent / RUN_FILE), llm.model_dump(mode="json")
    if differ := [k for k in SAME_MODEL if k in before and before[k] != now.get(k)]:
        said = ", ".join(f"{k} {before[k]!r} then, {now.get(k)!r} now" for k in differ)
        raise ConfigError(f"the answers at {path} came from other model settings ({said}): reuse them with those")
    if not journal.is_file():
        raise ConfigError(
            f"no answers to reuse at {path}: give an earlier run's project folder (it holds "
            f"{RECORD_DIR}/{JOURNAL_FILE}) or that journal file"
        )
    try:
        return load_journal(journal)
    except RunError as e:
        damaged = str(e).partition(";")[0]  # "<journal> line N is damaged (...)", without resume's advice
        raise ConfigError(f"cannot reuse these answers: {damaged}. Give another run, or none") from e


def _saved_llm(run_file: Path) -> dict[str, Any]:
    """The model settings a run file saved; empty when there is none to read."""
    try:
        saved = json.loads(run_file.read_text(encoding="utf-8")).get("llm")
    except (OSError, ValueError, AttributeError):
        return {}
    return saved if isinstance(saved, dict) else {}


def project_name_for(task: str) -> str:
    words = re.findall(r"[a-zA-Z0-9]+", task.lower())
    stop = {"a", "an", "the", "create", "write", "build", "make", "with", "and", "of", "for", "to", "in", "that"}
    kept = [w for w in words if w not in stop][:5] or ["project"]
    return "_".join(kept)[:60]


def project_dir(workspace: Path, name: str, *, force: bool = False) -> Path:
    """``workspace/name``, or ``name-2``, ``name-3``... if a non-empty folder is there: never overwrite work.
    With ``force``, ``workspace/name`` even when it holds files (the run commits them to its history first)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "project"
    candidate = workspace / safe
    if force:
        return candidate
    n = 2
    while candidate.exists() and any(candidate.iterdir()):
        candidate = workspace / f"{safe}-{n}"
        n += 1
    return candidate


def set_aside_for_resume(root: Path, *, files: bool = True) -> Path:
    """Move everything a replay re-creates (files, git history, logs) to ``.l2mac/before-resume-N/``: a resumed
    run rebuilds the project from a clean folder, and nothing the interrupted run left is deleted. Without
    ``files``, only the logs (a change to a repository keeps its files in git: ``Worktree.set_aside_for_resume``)."""
    record_dir = root / RECORD_DIR
    n = 1
    while (record_dir / f"before-resume-{n}").exists():
        n += 1
    aside = record_dir / f"before-resume-{n}"
    aside.mkdir()
    for entry in sorted(root.iterdir()) if files else []:
        if entry.name != RECORD_DIR:
            shutil.move(str(entry), aside / entry.name)
    logs = aside / RECORD_DIR
    for entry in sorted(record_dir.iterdir()):
        if entry.is_file() and entry.name not in {JOURNAL_FILE, RUN_FILE}:
            logs.mkdir(exist_ok=True)
            shutil.move(str(entry), logs / entry.name)
    return aside


def save_run_file(
    root: Path, task: str, settings: Settings, program: PromptProgram | None, worktree: dict[str, str] | None = None
) -> None:
    """What ``l2mac resume`` needs to run the task again: never the API key. Only the run settings that were
    set are kept, so that what is left to the protocol's defaults (samples, check failures) stays so; for a
    change to a repository, where its worktree is."""
    data = {
        "task": task,
        "llm": settings.llm.model_dump(mode="json", exclude={"api_key"}),
        "run": settings.run.model_dump(mode="json", exclude={"prompt_program"}, exclude_unset=True),
        "program": program.model_dump(mode="json") if program else None,
        "worktree": worktree,
    }
    _atomic_json(root / RECORD_DIR / RUN_FILE, data)


def _atomic_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def load_run(
    project: Path,
) -> tuple[str, dict[str, Any], dict[str, Any], PromptProgram | None, dict[str, str] | None]:
    """The task, saved settings, prompt program and worktree (a change to a repository) of the run in
    ``project`` (a folder a run wrote)."""
    path = project / RECORD_DIR / RUN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        program = PromptProgram.model_validate(data["program"]) if data.get("program") else None
        worktree = dict(data["worktree"]) if data.get("worktree") else None
        return str(data["task"]), dict(data["llm"]), dict(data["run"]), program, worktree
    except FileNotFoundError:
        raise ConfigError(f"{project} holds no l2mac run to resume (no {RECORD_DIR}/{RUN_FILE})") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{path} is damaged ({e}); the run cannot be resumed") from e
