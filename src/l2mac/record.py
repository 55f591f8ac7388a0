"""The run record in ``<project>/.l2mac/``: prompt program, step outcomes, a JSONL log of every model and tool
call, the final ``run_report.json``, and ``report.html`` drawn from them. Lines are flushed as they are written,
so a crash loses nothing logged.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from l2mac.models.client import CallRecord
from l2mac.report import RunReport
from l2mac.types import PromptProgram, StepOutcome

RECORD_DIR = ".l2mac"
#: the run as one page to look at (l2mac.visual writes it from the rest of the record)
PAGE_FILE = "report.html"


class RunRecord:
    def __init__(self, project_root: Path) -> None:
        self.dir = project_root / RECORD_DIR
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def program_path(self) -> Path:
        return self.dir / "prompt_program.yaml"

    @property
    def report_path(self) -> Path:
        return self.dir / "run_report.json"

    def _append(self, name: str, entry: dict[str, Any]) -> None:
        with (self.dir / name).open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, default=str) + "\n")
            f.flush()

    def log(self, kind: str, **data: Any) -> None:
        self._append("log.jsonl", {"ts": round(time.time(), 3), "kind": kind, **data})

    def log_call(self, call: CallRecord) -> None:
        self.log("model_call", **asdict(call))

    def save_program(self, program: PromptProgram) -> None:
        text = yaml.safe_dump(program.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=100)
        _atomic_write(self.program_path, text)

    def save_step(self, outcome: StepOutcome) -> None:
        self._append("steps.jsonl", {**asdict(outcome), "status": outcome.status.value})

    def save_report(self, report: RunReport) -> None:
        _atomic_write(self.report_path, report.model_dump_json(indent=2) + "\n")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
