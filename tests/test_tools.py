"""Tools called the way a model calls them: raw JSON arguments, validated, errors answered not raised."""

from __future__ import annotations

from pathlib import Path

from l2mac.checks.runner import SubprocessRunner
from l2mac.store import FileStore
from l2mac.tools import ALL_TOOLS, Toolbox, ToolEnv, tools_named


def box(tmp_path: Path, max_output_chars: int = 4000) -> Toolbox:
    env = ToolEnv(
        store=FileStore(tmp_path / "p"),
        runner=SubprocessRunner(),
        max_output_chars=max_output_chars,
        command_timeout_s=5,
    )
    return Toolbox(list(ALL_TOOLS.values()), env)


def test_every_tool_has_an_object_schema_with_descriptions() -> None:
    for tool in ALL_TOOLS.values():
        schema = tool.definition().parameters_json_schema
        assert schema["type"] == "object", tool.name
        assert tool.definition().description


def test_view_files_pages_big_files_instead_of_flooding_the_context(tmp_path: Path) -> None:
    b = box(tmp_path, max_output_chars=2000)
    b.call("write_files", {"files": [{"path": "big.txt", "content": "\n".join("x" * 50 for _ in range(500))}]})
    out = b.call("view_files", '{"files": [{"path": "big.txt"}]}').content
    assert len(out) < 2600
    assert "of 500)" in out and "call view_files with start_line=" in out
    nxt = int(out.split("start_line=")[1].split()[0])
    out2 = b.call("view_files", {"files": [{"path": "big.txt", "start_line": nxt, "end_line": nxt + 2}]}).content
    assert f"lines {nxt}-{nxt + 2} of 500" in out2


def test_write_files_reports_problems_in_written_python(tmp_path: Path) -> None:
    b = box(tmp_path)
    result = b.call("write_files", {"files": [{"path": "m.py", "content": "def f(:\n"}]})
    assert not result.ok and "m.py:1: syntax" in result.content
    result = b.call("write_files", {"files": [{"path": "m.py", "content": "import json\n"}]})
    assert result.ok and "Overwrote m.py" in result.content


def test_run_python_reports_exit_code_output_and_timeout(tmp_path: Path) -> None:
    b = box(tmp_path)
    b.call(
        "write_files",
        {
            "files": [
                {"path": "ok.py", "content": "import sys\nprint('hi', sys.argv[1:])\n"},
                {"path": "loop.py", "content": "while True:\n    pass\n"},
            ]
        },
    )
    ok = b.call("run_python", {"path": "ok.py", "args": ["a"]})
    assert ok.ok and "exit code 0" in ok.content and "hi ['a']" in ok.content
    slow = b.call("run_python", {"path": "loop.py", "timeout_s": 1})
    assert not slow.ok and "timed out" in slow.content
    missing = b.call("run_python", {"path": "nope.py"})
    assert not missing.ok and "no such file" in missing.content


def test_run_python_does_not_leak_secrets_to_generated_code(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    b = box(tmp_path)
    b.call("write_files", {"files": [{"path": "env.py", "content": "import os\nprint(sorted(os.environ))\n"}]})
    out = b.call("run_python", {"path": "env.py"}).content
    assert "OPENAI_API_KEY" not in out and "sk-secret" not in out


def test_tools_named_always_includes_step_complete() -> None:
    assert [t.name for t in tools_named(["list_files"])] == ["list_files", "step_complete"]
