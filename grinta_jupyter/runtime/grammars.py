"""Offline tree-sitter grammars: which language a file is, and its parser.

Grammars come from ``tree-sitter-language-pack==0.13.0``, the last release that
bundles compiled grammars inside the wheel. Nothing here touches the network:
``language_for`` and ``parser_for`` only load shared libraries from
site-packages. See docs/languages.md for the choice and the upgrade path.
"""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tree_sitter

# File suffix (lower case) -> language-pack name. Files whose suffix is not
# here get no tree-sitter validation and no symbols.
SUFFIX_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".rb": "ruby",
    ".cs": "csharp",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".swift": "swift",
    ".php": "php",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".css": "css",
    ".scss": "scss",
    ".html": "html",
    ".htm": "html",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".sql": "sql",
    ".zig": "zig",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".dart": "dart",
    ".r": "r",
    ".jl": "julia",
    ".vue": "vue",
    ".svelte": "svelte",
    ".proto": "proto",
    ".tf": "hcl",
    ".hcl": "hcl",
    ".nix": "nix",
    ".el": "elisp",
    ".clj": "clojure",
}

FILENAME_LANGUAGES: dict[str, str] = {
    "makefile": "make",
    "dockerfile": "dockerfile",
    "cmakelists.txt": "cmake",
}


def language_for(path: str) -> str | None:
    """The tree-sitter language name for ``path``, or None when unknown."""
    name = PurePosixPath(path).name.lower()
    if name in FILENAME_LANGUAGES:
        return FILENAME_LANGUAGES[name]
    return SUFFIX_LANGUAGES.get(PurePosixPath(name).suffix)


@cache
def grammar(language: str) -> tree_sitter.Language:
    """The compiled grammar for ``language``, loaded from the installed wheel."""
    from tree_sitter_language_pack import get_language

    return get_language(language)  # type: ignore[arg-type]


def parser_for(language: str) -> tree_sitter.Parser:
    """A fresh parser for ``language`` (parsers are cheap; trees are not kept)."""
    import tree_sitter

    return tree_sitter.Parser(grammar(language))


def syntax_errors(language: str, source: bytes) -> list[int]:
    """1-based lines of every ERROR or MISSING node tree-sitter finds in ``source``.

    The last few answers are kept: a symbol edit checks the text it made, then the runtime
    checks the same text before the proposal is shown (and an already broken file's errors
    are counted again), and each was a whole parse (3 ms for 350 lines of TypeScript)."""
    return list(_syntax_errors(language, source))


def forget() -> None:
    """Drop the answers kept (tests and benchmarks start from cold caches)."""
    _syntax_errors.cache_clear()


@lru_cache(maxsize=4)  # keyed by the bytes themselves: an equal text, never a stale one
def _syntax_errors(language: str, source: bytes) -> tuple[int, ...]:
    tree = parser_for(language).parse(source)
    if not tree.root_node.has_error:
        return ()
    lines: list[int] = []
    cursor = tree.walk()
    visited_children = False
    while True:
        node = cursor.node
        if not visited_children:
            assert node is not None
            if node.is_error or node.is_missing:
                lines.append(node.start_point[0] + 1)
                # Nested errors inside an ERROR node count once.
                visited_children = True
                continue
            if node.has_error and cursor.goto_first_child():
                continue
            visited_children = True
        elif cursor.goto_next_sibling():
            visited_children = False
        elif not cursor.goto_parent():
            break
    return tuple(lines)
