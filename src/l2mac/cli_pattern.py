"""What the command-line pattern (the codebase domain's ``text_cli_pattern``) is filled with: the project's own
data module, class, load and save functions, and the sub-commands the step names, so that a small model that
copies the example nearly as it is copies a program that already fits the project.

Seen in README runs: shown a notes tool, the model copied its names (Note, save_notes) into the todo app;
shown add, list and remove, it wrote exactly those and left out the step's ``done``; told that tests call
main(), it wrote tests of the core functions again. So the example is built from the step's own commands and
comes with a test of them."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass

from l2mac.checks.python import is_test_file, module_name


@dataclass(frozen=True)
class Command:
    """A sub-command the step names, as in "`add TASK` adds a task"; ``argument`` is TASK, if any."""

    name: str
    argument: str | None = None


@dataclass(frozen=True)
class DataModule:
    """The module that holds the project's data: its class (with the fields its constructor needs), load and save."""

    module: str
    cls: str
    load: str
    save: str
    required: tuple[tuple[str, str], ...] = ()  # (field, annotation) of the class's fields without a default


#: what the pattern shows when the project has no data module yet, or the step names no sub-commands
NOTES = DataModule("notes.core", "Note", "load_notes", "save_notes", (("text", "str"),))
DEFAULT_COMMANDS = (Command("add", "TEXT"), Command("list"), Command("remove"))

# a sub-command in backticks: `add TASK`, `list`, `done`
_COMMAND = re.compile(r"`([a-z][a-z0-9-]*)((?: [A-Z][A-Z0-9_]*)?)`")
_LISTS = frozenset({"list", "ls", "show", "all"})
_REMOVES = frozenset({"remove", "delete", "rm", "del", "drop", "clear"})
_ADDS = frozenset({"add", "new", "create", "append"})
#: words in backticks that name a library, not a sub-command ("using `argparse`")
_NOT_COMMANDS = frozenset(sys.stdlib_module_names) | {"pytest", "capsys", "tmp_path", "main"}
_DEFAULTS = {"str": '""', "bool": "False", "int": "0", "float": "0.0"}


def named_commands(instruction: str) -> tuple[Command, ...]:
    """The sub-commands an instruction names in backticks, in order; none unless it names at least two."""
    found = {
        m.group(1): Command(m.group(1), m.group(2).strip() or None)
        for m in _COMMAND.finditer(instruction)
        if m.group(1) not in _NOT_COMMANDS
    }
    return tuple(found.values()) if len(found) >= 2 else ()


def data_module(sources: dict[str, str]) -> DataModule | None:
    """The first non-test module (in path order) that defines a class and top-level functions named load*/save*
    (or read*/write*/store*)."""
    for path, source in sorted(sources.items()):
        if is_test_file(path) or not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        functions = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        load = next((f for f in functions if f.startswith(("load", "read"))), None)
        save = next((f for f in functions if f.startswith(("save", "write", "store"))), None)
        if load and save and classes:
            required = tuple(
                (n.target.id, ast.unparse(n.annotation))
                for n in classes[0].body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is None
            )
            return DataModule(module_name(path), classes[0].name, load, save, required)
    return None


def _new_item(data: DataModule, text: str) -> str:
    """The class constructed from one text argument, the other required fields at their empty values."""
    values = [text] + [_DEFAULTS.get(annotation, "None") for _, annotation in data.required[1:]]
    return f"{data.cls}({', '.join(values)})"


def _flag(data: DataModule) -> str | None:
    return next((name for name, annotation in data.required if annotation == "bool"), None)


def _line(data: DataModule) -> str:
    """What ``list`` prints for one item: its number, its flag as [x] or [ ], its text (not the class's repr)."""
    text = next((name for name, annotation in data.required if annotation == "str"), None)
    if text is None:
        return "number, item"
    flag = _flag(data)
    mark = f"[{{'x' if item.{flag} else ' '}}] " if flag else ""
    return f'f"{{number}}. {mark}{{item.{text}}}"'


def _add_command(commands: tuple[Command, ...]) -> Command | None:
    """The command that adds an item: one named like add, else the first that takes an argument."""
    return next((c for c in commands if c.name in _ADDS), None) or next((c for c in commands if c.argument), None)


def _program_lines(data: DataModule, commands: tuple[Command, ...]) -> tuple[list[str], list[str]]:
    """The parser's sub-command lines and the branches of main() for ``commands``."""
    parsers: list[str] = []
    branches: list[str] = []
    add = _add_command(commands)
    for command in commands:
        kind = "elif" if branches else "if"
        branches.append(f'{kind} args.command == "{command.name}":')
        if command is add:
            arg = (command.argument or "TEXT").lower()
            parsers.append(f'sub.add_parser("{command.name}").add_argument("{arg}")')
            branches += [f"    items.append({_new_item(data, f'args.{arg}')})", f"    {data.save}(path, items)"]
        elif command.name in _LISTS:
            parsers.append(f'sub.add_parser("{command.name}")')
            branches += ["    for number, item in enumerate(items, start=1):", f"        print({_line(data)})"]
        else:
            parsers.append(f'sub.add_parser("{command.name}").add_argument("number", type=int)')
            flag = _flag(data)
            if command.name in _REMOVES or flag is None:
                branches.append("    del items[args.number - 1]")
            else:
                branches.append(f"    items[args.number - 1].{flag} = True")
            branches.append(f"    {data.save}(path, items)")
    if any('"number"' in p for p in parsers):  # a number that names no item is the user's error, not a crash
        branches[:0] = [
            'number = getattr(args, "number", None)',
            "if number is not None and not 1 <= number <= len(items):",
            '    parser.error(f"there is no item {number}; the list has {len(items)}")',
        ]
    return parsers, branches


def _test_calls(commands: tuple[Command, ...]) -> list[str]:
    """One call of main() per command, in an order that leaves an item for each: add two, act on the first."""
    calls: list[str] = []
    add = _add_command(commands)
    for command in commands:
        if command is add:
            calls += [f'["{command.name}", "milk"]', f'["{command.name}", "eggs"]']
        elif command.name in _LISTS:
            continue
        else:
            calls.append(f'["{command.name}", "1"]')
    return calls


def cli_pattern_fields(sources: dict[str, str], instruction: str) -> dict[str, str]:
    """The fields of ``text_cli_pattern`` for a step with ``instruction`` in a project whose files are
    ``sources``."""
    found = data_module(sources)
    data = found or NOTES
    commands = named_commands(instruction) or DEFAULT_COMMANDS
    parsers, branches = _program_lines(data, commands)
    program_module = next(
        (
            module_name(p)
            for p in re.findall(r"\b([\w/]+\.py)\b", instruction)
            if not is_test_file(p) and module_name(p) != data.module
        ),
        f"{data.module.split('.')[0]}.cli",
    )
    listing = next((c.name for c in commands if c.name in _LISTS), None)
    package = data.module.split(".")[0]
    default_file = f"{package}.json" if package.endswith("s") else f"{package}s.json"
    indent = "\n    "
    test = [f"assert main(file + {call}) == 0" for call in _test_calls(commands)]
    if listing:
        test += [f'assert main(file + ["{listing}"]) == 0', "printed = capsys.readouterr().out"]
        removes = sum(c.name in _REMOVES for c in commands)
        test.append('assert "eggs" in printed' if removes <= 1 else 'assert "milk" not in printed')
    about = (
        f"with this project's {data.module}: {data.cls}, {data.load} and {data.save}"
        if found
        else f"this example is a notes tool whose {data.module.replace('.', '/')}.py has {data.cls}, "
        f"{data.load} and {data.save}"
    )
    return {
        "module": data.module,
        "cls": data.cls,
        "load": data.load,
        "save": data.save,
        "default_file": default_file,
        "about": about,
        "parsers": indent.join(parsers),
        "branches": indent.join(branches),
        "program_module": program_module,
        "test_calls": indent.join(test),
    }
