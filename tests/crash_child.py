"""Plays the scenario run in a child process and kills itself with SIGKILL at crash point N (the kill -9 test).

    python crash_child.py run WORKSPACE N      # N = 0: no crash; prints the number of crash points passed
    python crash_child.py resume PROJECT       # resume, answering only the calls the journal does not hold

Crash points: before and after every os.replace (atomic writes of project files, the record and the journal),
before, in the middle of (a torn line) and after every journal append, and before every git commit.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from scenario import full_run_replies

from l2mac import journal as journal_module
from l2mac.journal import JOURNAL_FILE, Journal, JournaledCall, load_journal
from l2mac.models.scripted import ScriptedModel
from l2mac.run import resume_l2mac, run_l2mac
from l2mac.settings import load_settings
from l2mac.store import GitHistory

TASK = "Build a todo app"
passed = 0


def point(crash_at: int) -> None:
    global passed
    passed += 1
    if passed == crash_at:
        os.kill(os.getpid(), signal.SIGKILL)


def install(crash_at: int) -> None:
    real_replace, real_append, real_commit = os.replace, Journal.append, GitHistory.commit

    def replace(src: Any, dst: Any, **kw: Any) -> None:
        point(crash_at)
        real_replace(src, dst, **kw)
        point(crash_at)

    def append(self: Journal, call: JournaledCall) -> None:
        point(crash_at)
        if passed + 1 == crash_at:  # a torn line: half of it reaches the disk, then the kill
            line = journal_module._encode(call)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line[: len(line) // 2])
                f.flush()
                os.fsync(f.fileno())
        point(crash_at)
        real_append(self, call)
        point(crash_at)

    def commit(self: GitHistory, message: str) -> str | None:
        point(crash_at)
        return real_commit(self, message)

    os.replace = replace  # type: ignore[assignment]
    Journal.append = append  # type: ignore[method-assign]
    GitHistory.commit = commit  # type: ignore[method-assign]


def settings(workspace: Path) -> Any:
    return load_settings(
        config_path=workspace / "none.yaml",
        environ={},
        llm={"context_window": 16000},
        # the script answers the planned steps only: no README step
        run={"workspace": workspace, "project_name": "proj", "sandbox": "subprocess", "readme_step": False},
    )


def main() -> None:
    mode, where = sys.argv[1], Path(sys.argv[2])
    if mode == "run":
        install(int(sys.argv[3]))
        script = ScriptedModel(full_run_replies())
        result = run_l2mac(TASK, settings(where), model=script.model)
        print(json.dumps({"points": passed, "status": result.report.status, "live_calls": len(script.requests)}))
    else:
        journaled = len(load_journal(where / ".l2mac" / JOURNAL_FILE))
        script = ScriptedModel(full_run_replies()[journaled:])
        result = resume_l2mac(where, model=script.model, overrides={"sandbox": "subprocess"})
        out = {"status": result.report.status, "live_calls": len(script.requests), "journaled": journaled}
        print(json.dumps({**out, "remaining": script.remaining, "replayed": result.report.journal.model_dump()}))


if __name__ == "__main__":
    main()
