"""Mutation operators: each a minimal rewrite of one token range, inside function bodies only."""

from __future__ import annotations

import ast

import pytest

from grinta_jupyter.experiment.mutate import OPERATORS, find_mutations

SOURCE = '''"""A module: 1 < 2 here is a docstring, never mutated."""

LIMIT = 10 - 1  # module level: never mutated


def total(items, start, weight):
    """Sum 2 + 2 things."""
    if not items:
        return 0
    result = start
    for i in range(1, len(items)):
        if items[i] <= LIMIT and weight is not None:
            result += items[i - 1] * 2
        else:
            result -= 1
    label = "n=" + str(result)
    return divmod(result, weight)


class Box:
    size = 3 + 1  # class level: never mutated

    def fits(self, other):
        """Whether é fits."""
        name = "é" * 2
        return other.size >= self.size // 2 or name in other.names
'''


def sites(source: str = SOURCE):
    return find_mutations(source, "pkg/mod.py")


def rewrites(operator: str) -> set[tuple[str, str]]:
    return {(m.original, m.replacement) for m in sites() if m.operator == operator}


def test_each_operator_rewrites_what_its_name_says():
    assert rewrites("comparison") == {("<=", "<"), ("is not", "is"), (">=", ">"), ("in", "not in")}
    assert rewrites("operator") >= {
        ("and", "or"),
        ("or", "and"),
        ("+=", "-="),
        ("-=", "+="),
        ("-", "+"),
        ("//", "/"),
    }
    assert ("+", "-") not in rewrites("operator")  # "n=" + str(...) is concatenation
    assert rewrites("off_by_one") >= {("1", "0"), ("1", "2"), ("2", "1"), ("2", "3")}
    assert rewrites("swapped_arguments") == {
        ("1, len(items)", "len(items), 1"),
        ("result, weight", "weight, result"),
    }
    dropped = rewrites("dropped_branch") | rewrites("dropped_return")
    assert ("    if not items:\n        return 0\n", "") in dropped
    assert ("        else:\n            result -= 1\n", "") in dropped
    assert ("    return divmod(result, weight)\n", "") in dropped
    assert {m.operator for m in sites()} == set(OPERATORS)


def test_only_function_bodies_are_mutated_never_docstrings_or_module_or_class_level():
    lines = SOURCE.split("\n")
    for m in sites():
        line = lines[m.line - 1]
        assert not line.startswith(('"""', "LIMIT", "    size", '    """')), m
        assert m.function in {"total", "Box.fits"}


@pytest.mark.parametrize("mutation", sites(), ids=lambda m: f"{m.operator}:{m.line}:{m.original}")
def test_a_mutation_changes_one_range_and_reverts_byte_for_byte(mutation):
    mutated = mutation.apply(SOURCE)
    ast.parse(mutated)  # still Python
    assert mutated[: mutation.start] == SOURCE[: mutation.start]
    tail = len(SOURCE) - mutation.end
    assert mutated[len(mutated) - tail :] == SOURCE[mutation.end :]
    assert mutation.revert(mutated) == SOURCE


def test_offsets_count_characters_not_bytes_after_non_ascii_text():
    line = SOURCE.split("\n").index('        name = "é" * 2') + 1
    on_line = [m for m in sites() if m.line == line]
    assert {(m.original, m.replacement) for m in on_line} == {("2", "1"), ("2", "3")}
    assert all(SOURCE[m.start : m.end] == "2" for m in on_line)  # ast counts bytes: é is two


def test_a_block_of_one_statement_is_never_emptied():
    source = "def f(x):\n    if x:\n        return 1\n    return 2\n\ndef g(x):\n    return x\n"
    dropped = [m for m in find_mutations(source, "m.py") if m.operator.startswith("dropped")]
    # f: the guard and the final return may go; g's only statement and the guard's body may not.
    assert sorted(m.original for m in dropped) == [
        "    if x:\n        return 1\n",
        "    return 2\n",
    ]


def test_apply_refuses_a_text_the_mutation_was_not_found_in():
    (first, *_) = sites()
    with pytest.raises(ValueError, match="no longer holds"):
        first.apply(SOURCE.replace(first.original, "#" * len(first.original), 1))


def test_sources_that_do_not_parse_or_use_cr_line_ends_have_no_sites():
    assert find_mutations("def f(:\n", "bad.py") == []
    assert find_mutations("def f(x):\r\n    return x + 1\r\n", "crlf.py") == []
