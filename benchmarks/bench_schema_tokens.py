"""The model-facing schema of each toolset in o200k tokens, counted offline.

Goal (issue 2): at most 1,000 tokens for the whole intent toolset.
Run: python benchmarks/bench_schema_tokens.py
"""

from __future__ import annotations

from grinta_jupyter.tools import TOOLSETS
from grinta_jupyter.tools.tokens import schema_tokens


def main() -> None:
    for name, factory in sorted(TOOLSETS.items()):
        toolset = factory()
        counts = {spec.name: schema_tokens([spec.schema()]) for spec in toolset.tools.values()}
        total = schema_tokens(toolset.schemas())
        print(f"toolset {name}: {total} tokens for {len(counts)} tools")
        for tool, count in counts.items():
            print(f"  {tool:<16} {count:5d}")


if __name__ == "__main__":
    main()
