"""The model-facing schema of each toolset in o200k tokens, counted offline.

Counted as providers receive them: the schemas as compact JSON (``schema_tokens``).
Goals: at most 1,000 tokens for the whole intent toolset (issue 2), then at most 800
(issue 13, when it was 821); the intent line says whether it is met.
Run: python benchmarks/bench_schema_tokens.py
"""

from __future__ import annotations

from grinta_jupyter.tools import TOOLSETS
from grinta_jupyter.tools.tokens import schema_tokens

GOAL_INTENT_TOKENS = 800


def main() -> None:
    for name, factory in sorted(TOOLSETS.items()):
        toolset = factory()
        counts = {spec.name: schema_tokens([spec.schema()]) for spec in toolset.tools.values()}
        total = schema_tokens(toolset.schemas())
        verdict = ""
        if name == "intent":
            met = "met" if total <= GOAL_INTENT_TOKENS else "NOT met"
            verdict = f" (goal <= {GOAL_INTENT_TOKENS}: {met})"
        print(f"toolset {name}: {total} tokens for {len(counts)} tools{verdict}")
        for tool, count in counts.items():
            print(f"  {tool:<16} {count:5d}")


if __name__ == "__main__":
    main()
