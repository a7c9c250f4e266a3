"""Counting tokens offline with the o200k_base encoding that litellm ships.

tiktoken would download its encodings on first use; litellm's wheel carries
them, so we point tiktoken's cache at that folder. Nothing is downloaded.

Loading the encoding takes 0.5-0.8 s of the interpreter's lock. Until it is loaded here, a
count goes to the counting helper if one was started (a kernel's warming starts it first
thing: ``runtime/counting.py``), and loading it here stops the helper.
"""

from __future__ import annotations

import json
import os
import threading
from functools import cache, lru_cache
from typing import Any

from grinta_jupyter.runtime import counting

_LOADING = threading.Lock()
_loaded: Any = None  # the encoding, once this process has loaded it
# A forked child whose parent was loading the encoding at the fork: it counts with a helper
# of its own (``_forget_after_fork``).
_forked_mid_load = False
_env_before: str | None = None  # TIKTOKEN_CACHE_DIR before the load under way set it


@cache
def _encoding() -> Any:
    # One load at a time (the kernel's warming thread and a session's first turn may ask
    # together): the variable set below is the whole process's, and two loads overlapping
    # would leave it set to litellm's folder for every command started after.
    global _loaded
    with _LOADING:
        encoding = _load()
    _loaded = encoding
    counting.HELPER.close()  # counts are made here from now on
    return encoding


@cache
def _load() -> Any:
    folder = counting.litellm_folder()
    import tiktoken

    # Point tiktoken at litellm's copy for this one load, whatever the user's cache
    # setting: a cache folder without the file would make tiktoken download it.
    global _env_before
    saved = _env_before = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        return tiktoken.get_encoding(counting.ENCODING)
    finally:
        if saved is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved


def load() -> None:
    """Load the encoding in this process (the warming's last part); the helper then stops."""
    _encoding()


def start_helper() -> None:
    """Start the counting helper (``runtime/counting.py``) unless the encoding is loaded here."""
    counting.start()


def count_tokens(text: str) -> int:
    """Tokens of ``text``, special tokens' names (``<|endoftext|>``) counted as plain text:
    that is what a file or an output holding one is to the model."""
    encoding = _loaded
    if encoding is None:
        if _forked_mid_load:
            counting.start()  # at most once
        counted = counting.HELPER.count(text)
        if counted is not None:
            return counted
        encoding = _encoding()
    return len(encoding.encode_ordinary(text))


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


def _forget_after_fork() -> None:
    # A thread of the parent may have been loading the encoding at the fork. That thread is
    # gone here, and what it held stays held: tiktoken's registry lock, a module it was
    # importing, the cache variable it set. A load here could wait forever, so such a child
    # counts with a helper of its own (a fresh interpreter, started on its first count) and
    # gets the variable back as it was. (Runs after runtime/counting.py's own hook, which
    # gives the child a helper not yet started.)
    global _LOADING, _forked_mid_load
    if _LOADING.locked() and _loaded is None:
        _forked_mid_load = True
        counting.HELPER = counting._Helper()
        if _env_before is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = _env_before
    _LOADING = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
