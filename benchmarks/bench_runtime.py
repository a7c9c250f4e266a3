"""propose+commit latency of replace_string and multiedit on 1k, 10k and 100k-line files.

Goal (issue 2): p95 under 20 ms at 10k lines. Run: python benchmarks/bench_runtime.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from grinta_jupyter import Runtime

REPEATS = 30


def make_module(lines: int) -> str:
    # Realistic Python: functions with a docstring, a loop and a branch (5 lines each).
    out = []
    for i in range(lines // 5):
        out.append(
            f"def handler_{i}(event, ctx):\n"
            f'    """Handle event {i}."""\n'
            f"    for item in event.items:\n"
            f"        ctx.process(item, weight={i})\n"
            f"    return ctx.result()\n"
        )
    return "".join(out)


def measure(rt: Runtime, make_call) -> list[float]:
    # One warm-up call: the first edit of a file compiles it whole (later ones only the region).
    warm = rt.propose(*make_call(REPEATS))
    assert rt.commit(warm).ok
    samples = []
    for k in range(REPEATS):
        tool, args = make_call(k)
        start = time.perf_counter()
        proposal = rt.propose(tool, args)
        observation = rt.commit(proposal)
        samples.append((time.perf_counter() - start) * 1000)
        assert observation.ok, observation.output
    return samples


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


def main() -> None:
    print(f"{'file lines':>10}  {'tool':<15} {'p50 ms':>8} {'p95 ms':>8}")
    for lines in (1_000, 10_000, 100_000):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            for name in ("a.py", "b.py"):
                (root / name).write_text(make_module(lines))
            rt = Runtime(root)

            def replace(k: int, lines: int = lines):
                i = (k * 37) % (lines // 5)
                return "replace_string", {
                    "path": "a.py",
                    "old_string": f"weight={i})\n",
                    "new_string": f"weight={i} + {k})\n",
                }

            def multi(k: int, lines: int = lines):
                i = (k * 53) % (lines // 5)
                return "multiedit", {
                    "edits": [
                        {
                            "path": "a.py",
                            "old_string": f'"""Handle event {i}."""',
                            "new_string": f'"""Event {i}/{k}."""',
                        },
                        {
                            "path": "b.py",
                            "old_string": f'"""Handle event {i}."""',
                            "new_string": f'"""Event {i}/{k}."""',
                        },
                    ]
                }

            for label, make_call in (("replace_string", replace), ("multiedit", multi)):
                samples = measure(rt, make_call)
                print(
                    f"{lines:>10}  {label:<15} {statistics.median(samples):8.1f} {p95(samples):8.1f}"
                )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
