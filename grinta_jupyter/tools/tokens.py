"""Counting tokens offline with the o200k_base encoding that litellm ships.

tiktoken would download its encodings on first use; litellm's wheel carries
them, so we point tiktoken's cache at that folder. Nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import threading
from functools import cache, lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

_LOADING = threading.Lock()


@cache
def _encoding() -> Any:
    # One load at a time (the kernel's warming thread and a session's first turn may ask
    # together): the variable set below is the whole process's, and two loads overlapping
    # would leave it set to litellm's folder for every command started after.
    with _LOADING:
        return _load()


@cache
def _load() -> Any:
    spec = find_spec("litellm")
    if spec is None or spec.origin is None:
        raise RuntimeError("litellm is not installed; it carries the offline token encodings")
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    import tiktoken

    # Point tiktoken at litellm's copy for this one load, whatever the user's cache
    # setting: a cache folder without the file would make tiktoken download it.
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        return tiktoken.get_encoding("o200k_base")
    finally:
        if saved is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved


def count_tokens(text: str) -> int:
    """Tokens of ``text``, special tokens' names (``<|endoftext|>``) counted as plain text:
    that is what a file or an output holding one is to the model."""
    return len(_encoding().encode_ordinary(text))


def counted_in_request(text: str) -> int:
    """Tokens of ``text`` as a request's count takes them (agent/context.py): inside a JSON
    string, its quotes, backslashes and control characters escaped (a text fitted by its raw
    count could take a request over its budget)."""
    return count_tokens(json.dumps(text, ensure_ascii=False)[1:-1])


def schema_tokens(schemas: list[dict[str, Any]]) -> int:
    """Tokens of the schemas as compact JSON (how providers serialise tools, roughly)."""
    return schema_json_tokens(json.dumps(schemas, separators=(",", ":")))


def schema_json_tokens(text: str) -> int:
    """``schema_tokens`` of schemas already serialised as compact JSON (``text``)."""
    return _cached_count(text)


@lru_cache(maxsize=16)
def _cached_count(text: str) -> int:
    """``count_tokens`` for texts counted again and again (the same schemas every turn)."""
    return count_tokens(text)
