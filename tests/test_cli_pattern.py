"""The command-line pattern is filled from the step's instruction and the project's data module."""

from __future__ import annotations

from l2mac.cli_pattern import DEFAULT_COMMANDS, Command, cli_pattern_fields, data_module, named_commands


def test_the_sub_commands_a_step_names_in_backticks_are_found_and_libraries_are_not() -> None:
    instruction = (
        "Write todo/cli.py using `argparse` and `json`: `add TASK` adds a task; `list` prints them; `done` marks "
        "one; `remove` removes one; the default file is `todos.json`, the option `--file`."
    )
    assert named_commands(instruction) == (Command("add", "TASK"), Command("list"), Command("done"), Command("remove"))
    assert named_commands("A CLI with a `list` command.") == ()  # one word in backticks is not a command set


def test_without_named_commands_or_a_data_module_the_notes_example_is_shown() -> None:
    fields = cli_pattern_fields({}, "Write a command-line tool with argparse.")
    assert fields["module"] == "notes.core" and fields["default_file"] == "notes.json"
    assert fields["parsers"].count("sub.add_parser(") == len(DEFAULT_COMMANDS)
    assert fields["program_module"] == "notes.cli"


def test_the_data_module_gives_the_class_fields_a_new_item_needs() -> None:
    sources = {
        "tests/test_core.py": "class X: ...\n\n\ndef load_x(): ...\n\n\ndef save_x(): ...\n",
        "shop/store.py": (
            "from dataclasses import dataclass, field\n\n\n@dataclass\nclass Item:\n    name: str\n    count: int\n"
            "    bought: bool\n    tags: list[str] = field(default_factory=list)\n\n\n"
            "def read_items(path): ...\n\n\ndef write_items(path, items): ...\n"
        ),
    }
    found = data_module(sources)
    assert found is not None and (found.module, found.cls, found.load, found.save) == (
        "shop.store",
        "Item",
        "read_items",
        "write_items",
    )
    fields = cli_pattern_fields(sources, "Write shop/main.py: `new NAME`, `show`, `buy`, `drop`.")
    assert "items.append(Item(args.name, 0, False))" in fields["branches"]
    assert "items[args.number - 1].bought = True" in fields["branches"]  # the class's flag, for `buy`
    assert "del items[args.number - 1]" in fields["branches"]  # `drop` removes
    assert fields["program_module"] == "shop.main" and fields["default_file"] == "shops.json"
