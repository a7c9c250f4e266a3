"""Counting tokens offline with the o200k_base encoding that litellm ships.

tiktoken would download its encodings on first use; litellm's wheel carries
them, so we point tiktoken's cache at that folder. Nothing is downloaded.
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any


@cache
def _encoding() -> Any:
    spec = find_spec("litellm")
    if spec is None or spec.origin is None:
        raise RuntimeError("litellm is not installed; it carries the offline token encodings")
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(folder))
    import tiktoken

    return tiktoken.get_encoding("o200k_base")


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text))


def schema_tokens(schemas: list[dict[str, Any]]) -> int:
    """Tokens of the schemas as compact JSON (how providers serialise tools, roughly)."""
    return count_tokens(json.dumps(schemas, separators=(",", ":")))
