"""The command line: the reference implementation's forms, exit codes, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import l2mac.run
from l2mac.cli import main
from l2mac.models.registry import ModelInfo
from l2mac.models.scripted import ScriptedModel, call


def use_script(monkeypatch: pytest.MonkeyPatch, replies: list) -> ScriptedModel:
    script = ScriptedModel(list(replies))
    monkeypatch.setenv("L2MAC_README_STEP", "0")  # the scripts answer the planned steps only
    monkeypatch.setattr(l2mac.run, "build_model", lambda llm: ModelInfo(script.model, "scripted", "scripted", 16000))
    return script


def cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(args)
    return int(exc.value.code or 0)


ONE_STEP = call("submit_plan", {"steps": [{"title": "Hello", "instruction": "hello.py", "requires_tests": False}]})
WRITE = call("write_files", {"files": [{"path": "hello.py", "content": "print('hi')\n"}]})


def test_prompt_runs_and_exits_0_with_a_summary(tmp_path: Path, monkeypatch, capsys) -> None:
    use_script(monkeypatch, [ONE_STEP, WRITE, call("step_complete", {"summary": "hello"})])
    code = cli(["Create hello world", "--model", "gpt-4o", "--workspace", str(tmp_path), "--project-name", "hw"])
    out = capsys.readouterr().out
    assert code == 0
    assert "l2mac run" in out and "1 passed, 0 failed of 1" in out
    assert json.loads((tmp_path / "hw" / ".l2mac" / "run_report.json").read_text())["status"] == "passed"
    # the isolation generated code ran under, said first; the page to look at, named last
    assert "generated code runs under bubblewrap" in out or "does NOT hide your files" in out
    assert f"Page: {tmp_path / 'hw' / '.l2mac' / 'report.html'}" in out
    assert (tmp_path / "hw" / ".l2mac" / "report.html").read_text().count('<tr class="step"') == 1


def test_explicit_run_subcommand_and_prompt_program(tmp_path: Path, monkeypatch) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("- write hello.py\n")
    use_script(monkeypatch, [WRITE, call("step_complete", {"summary": "hello"})])
    assert (
        cli(
            [
                "run",
                "hello",
                "--model",
                "m",
                "--workspace",
                str(tmp_path),
                "--prompt-program",
                str(plan),
                "--no-run-tests",
            ]
        )
        == 0
    )


def test_failed_step_exits_1(tmp_path: Path, monkeypatch) -> None:
    # the model never calls step_complete: the step spends its 3 turns and fails
    use_script(
        monkeypatch,
        [ONE_STEP, WRITE, call("list_files", {}), call("run_python", {"path": "hello.py"}), call("list_files", {})],
    )
    monkeypatch.setenv("L2MAC_CONFIG", str(tmp_path / "c.yaml"))
    (tmp_path / "c.yaml").write_text("run:\n  max_turns: 3\n")
    assert cli(["hello", "--model", "m", "--workspace", str(tmp_path)]) == 1


def test_budget_stop_exits_3(tmp_path: Path, monkeypatch, capsys) -> None:
    use_script(monkeypatch, [ONE_STEP, WRITE] + [call("list_files", {})] * 5)
    assert cli(["hello", "--model", "m", "--workspace", str(tmp_path), "--max-tokens", "300"]) == 3
    assert "token budget" in capsys.readouterr().out


def test_user_errors_exit_2_with_one_line_and_no_traceback(tmp_path: Path, capsys) -> None:
    assert cli(["", "--model", "m", "--workspace", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "the prompt is empty" in err and "Traceback" not in err
    assert cli(["hello", "--workspace", str(tmp_path)]) == 2
    assert "no LLM is configured" in capsys.readouterr().err
    assert cli(["hello", "--model", "m", "--domain", "poetry"]) == 2
    assert "unknown domain" in capsys.readouterr().err
    assert cli(["hello", "--model", "m", "--domain", "poetry", "--verbose"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_init_config_creates_the_file(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("L2MAC_CONFIG")
    assert cli(["--init-config", ""]) == 0
    assert (tmp_path / ".l2mac" / "config.yaml").stat().st_mode & 0o777 == 0o600
    assert cli(["--init-config", ""]) == 0
    assert "already exists" in capsys.readouterr().out


def test_library_api_matches_the_reference_usage(tmp_path: Path, monkeypatch) -> None:
    from l2mac import generate_codebase

    use_script(monkeypatch, [ONE_STEP, WRITE, call("step_complete", {"summary": "hello"})])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    codebase = generate_codebase("Create a beautiful, playable and simple snake game with pygame.")
    assert codebase == {"hello.py": "print('hi')\n"}
    assert (tmp_path / "workspace").is_dir()


def test_ctrl_c_mid_run_exits_130_and_keeps_the_files(tmp_path: Path, monkeypatch, capsys) -> None:
    def interrupt(_messages):
        raise KeyboardInterrupt

    use_script(monkeypatch, [ONE_STEP, WRITE, interrupt])
    args = ["Create hello world", "--model", "gpt-4o", "--workspace", str(tmp_path), "--project-name", "hw"]
    assert cli(args) == 130
    assert "interrupted" in capsys.readouterr().err
    assert (tmp_path / "hw" / "hello.py").read_text() == "print('hi')\n"


def test_sigterm_mid_run_stops_it_as_ctrl_c_does(tmp_path: Path, monkeypatch, capsys) -> None:
    import os
    import signal

    def terminate(_messages):
        os.kill(os.getpid(), signal.SIGTERM)  # as `kill` or a job's time limit sends it
        raise AssertionError("SIGTERM did not stop the run")

    before = signal.getsignal(signal.SIGTERM)
    use_script(monkeypatch, [ONE_STEP, WRITE, terminate])
    args = ["Create hello world", "--model", "gpt-4o", "--workspace", str(tmp_path), "--project-name", "hw"]
    assert cli(args) == 130
    assert "interrupted" in capsys.readouterr().err
    assert (tmp_path / "hw" / "hello.py").read_text() == "print('hi')\n"
    assert signal.getsignal(signal.SIGTERM) == before  # put back once l2mac returns


def test_ctrl_c_prints_the_resume_command_and_resume_finishes_the_run(tmp_path: Path, monkeypatch, capsys) -> None:
    def interrupt(_messages):
        raise KeyboardInterrupt

    use_script(monkeypatch, [ONE_STEP, WRITE, interrupt])
    args = ["Create hello world", "--model", "gpt-4o", "--workspace", str(tmp_path), "--project-name", "hw"]
    assert cli(args) == 130
    err = capsys.readouterr().err
    assert f"resume with: l2mac resume {tmp_path / 'hw'}" in err.replace("\n", "")
    rest = use_script(monkeypatch, [call("step_complete", {"summary": "hello"})])  # only what is not journaled
    assert cli(["resume", str(tmp_path / "hw")]) == 0
    assert rest.remaining == 0 and len(rest.requests) == 1
    report = json.loads((tmp_path / "hw" / ".l2mac" / "run_report.json").read_text())
    assert report["status"] == "passed" and report["journal"]["replayed_calls"] == 2


def test_require_sandbox_without_bubblewrap_exits_2_before_anything_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    script = use_script(monkeypatch, [ONE_STEP])
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert cli(["hello", "--model", "m", "--workspace", str(tmp_path / "ws"), "--require-sandbox"]) == 2
    assert "--require-sandbox: bubblewrap (bwrap) is not installed" in capsys.readouterr().err.replace("\n", " ")
    assert script.requests == [] and not (tmp_path / "ws").exists()


@pytest.mark.parametrize("args", [["run", "--help"], ["bench", "project", "--help"]])
def test_help_shows_the_defaults_written_in_option_help(args: list[str], capsys, monkeypatch) -> None:
    # rich treats "[default: x]" as a markup tag and drops it; the help must still say what the default is
    monkeypatch.setenv("COLUMNS", "200")
    assert cli(args) == 0
    out = capsys.readouterr().out
    assert "(default: ./workspace)" in out if args[0] == "run" else "(default: the generator)" in out


def test_tables_sent_to_a_pipe_are_not_cut_and_models_list_has_json(capsys) -> None:
    assert cli(["models", "list"]) == 0
    out = capsys.readouterr().out  # captured: not a terminal, as with `| cat`
    assert "qwen2.5-coder-1.5b " in out and "--model local:qwen2.5-coder-1.5b" in out
    assert "Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0); runs on a laptop CPU" in out
    assert cli(["models", "list", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0]["name"] == "qwen2.5-coder-1.5b" and rows[0]["bytes"] == 1_117_320_768


def test_the_isolation_line_says_when_the_users_files_are_not_hidden() -> None:
    from l2mac.checks.sandbox import isolation_line

    assert "home folder hidden" in isolation_line("bubblewrap") and "no network" in isolation_line("bubblewrap")
    fallback = isolation_line("subprocess+rlimits")
    assert "does NOT hide your files" in fallback and "apt install bubblewrap" in fallback
