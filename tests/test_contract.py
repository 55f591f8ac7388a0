"""The skeleton a step gives is a contract: a written file keeps its functions' heads (checks/contract.py)."""

from __future__ import annotations

from pathlib import Path

from l2mac.checks import find_code_issues
from l2mac.checks.contract import given_heads, given_skeleton
from l2mac.checks.repairs import repair_written
from l2mac.store import FileStore

SKELETON = '''class Cipher:
    """Classic ciphers."""

    def __init__(self, key):
        self.key = key

    def caesar(self, text, shift):
        """Shift each letter.
        >>> Cipher("k").caesar("abc", 1)
        'bcd'
        """

    @staticmethod
    def rails(text, rails=2):
        """Rail fence."""
'''
TASK = f"Implement the Python class below in solution.py: keep its methods' signatures.\n\n```python\n{SKELETON}```"

# seen on ClassEval_37 at 42ff847: a parameter added to fix an undefined name, a docstring example made up,
# a decorator dropped
WRITTEN = '''class Cipher:
    """Classic ciphers."""

    def __init__(self, key):
        self.key = key

    def caesar(self, text, shift: int, extra) -> str:
        """Shift each letter.
        >>> Cipher("k").caesar("abc", 1)
        'bcd'
        """
        return "".join(chr((ord(c) - 97 + shift + extra) % 26 + 97) for c in text)

    def rails(text, rails=2):
        """Rail fence.
        >>> Cipher.rails("xyz")
        'xzy'
        """
        return text[::2] + text[1::2]
'''


def test_heads_the_skeleton_gives_are_put_back_and_their_bodies_kept() -> None:
    fixed, changed = given_heads(WRITTEN, SKELETON)
    assert changed == ["Cipher.caesar", "Cipher.rails"]
    assert "    def caesar(self, text, shift):\n" in fixed
    assert '    @staticmethod\n    def rails(text, rails=2):\n        """Rail fence."""\n        return' in fixed
    assert "xzy" not in fixed  # the made-up example is gone
    assert "+ shift + extra) % 26" in fixed  # the body as written: its undefined name is now a code problem
    assert "    def __init__(self, key):\n        self.key = key\n" in fixed


def test_annotations_alone_and_functions_the_skeleton_does_not_give_are_left_as_written() -> None:
    annotated = SKELETON.replace("def caesar(self, text, shift):", "def caesar(self, text: str, shift: int) -> str:")
    helper = annotated + "\n\ndef helper(x, y):\n    return x\n"
    assert given_heads(helper, SKELETON) == (helper, [])
    assert given_heads("def f(:\n", SKELETON) == ("def f(:\n", [])


def test_the_skeleton_is_the_block_that_gives_the_file_a_stub() -> None:
    assert given_skeleton(TASK, ["caesar", "rails"], "solution.py") == SKELETON
    assert given_skeleton(TASK, ["caesar"], "other.py") == SKELETON  # an unlabelled block is any file's
    assert given_skeleton("```python\nprint(Cipher('k').caesar('a', 1))\n```", ["caesar"]) is None


def test_a_written_file_gets_the_given_heads_back_and_the_model_is_told(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.write_text("solution.py", WRITTEN)
    logged: list[tuple[str, dict[str, object]]] = []
    check = lambda paths: find_code_issues(store.root, store.list_files(), only=paths)  # noqa: E731
    notes = repair_written(store, check, ["solution.py"], lambda r, **f: logged.append((r, f)), TASK)
    assert "def caesar(self, text, shift):\n" in store.read_text("solution.py")
    assert notes[0].startswith("Put back the signatures and docstrings the task gives Cipher.caesar, Cipher.rails")
    assert ("given_heads_restored", {"path": "solution.py", "functions": ["Cipher.caesar", "Cipher.rails"]}) in logged
    issues = find_code_issues(store.root, ["solution.py"])
    assert any("extra" in i.message for i in issues)  # what the body used and the head no longer has


def test_a_name_defined_twice_is_left_alone_and_one_head_that_cannot_go_back_leaves_the_others() -> None:
    skeleton = (
        'class Box:\n    @property\n    def size(self):\n        """The size."""\n\n'
        '    @size.setter\n    def size(self, value):\n        """Set it."""\n\n'
        '    def grow(self, by):\n        """Grow."""\n\n'
        "    def shrink(self, by):\n        pass\n"
    )
    source = (
        "class Box:\n    @property\n    def size(self):\n        return self._s\n\n"
        "    @size.setter\n    def size(self, value):\n        self._s = value\n\n"
        "    def grow(self, by, twice):\n        self._s += by\n\n"
        '    def shrink(self, by, twice):\n        """Shrink."""\n'
    )
    fixed, changed = given_heads(source, skeleton)
    assert changed == ["Box.grow"]  # the property's two heads kept; shrink's given head would leave no body
    assert 'def grow(self, by):\n        """Grow."""\n        self._s += by\n' in fixed
    assert "    @property\n    def size(self):\n        return self._s\n" in fixed
    assert "def shrink(self, by, twice):" in fixed


def test_a_given_skeleton_that_does_not_parse_is_mended_of_typographic_quotes_and_an_unclosed_docstring() -> None:
    # Seen in ClassEval: ClassEval_43 and _46 open docstrings with typographic quotes, ClassEval_22 leaves one
    # unclosed; their skeletons gave l2mac no stub to begin an answer in, and no example to check.
    from l2mac.checks.contract import mended, parses
    from l2mac.checks.examples import given_examples

    curly = (
        "class T:\n    def f(self, x):\n        \u201c\u201d\u201c\n        Twice x.\n        >>> T().f(2)\n        4\n"
    )
    curly += "        \u201d\u201c\u201d\n"
    unclosed = 'class T:\n    def f(self, x):\n        """\n        Twice x.\n\n    def g(self):\n        """G."""\n'
    for broken in (curly, unclosed):
        step = f"Implement T in t.py.\n\n```python\n{broken}```"
        skeleton = given_skeleton(step, ["f"])
        assert skeleton is not None and parses(skeleton) and "def f(self, x):" in skeleton
    assert [e.name for e in given_examples(f"```python\n{curly}```")] == ["T.f"]
    assert mended('x = "\u201cquoted\u201d"\n') == 'x = "\u201cquoted\u201d"\n'  # it parses: as it is
    assert mended("def f(:\n") == "def f(:\n"  # no mending makes it parse: as it is
