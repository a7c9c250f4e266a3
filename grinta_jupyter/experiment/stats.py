"""Bootstrap statistics for the experiment's results table."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Estimate:
    """A mean with a percentile-bootstrap confidence interval."""

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        if self.n == 0:
            return "n/a"
        return f"{self.mean:.3g} [{self.low:.3g}, {self.high:.3g}]"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    position = q * (len(sorted_values) - 1)
    lower = int(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * (position - lower)


def bootstrap_mean(
    values: Sequence[float], *, resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> Estimate:
    """Mean of ``values`` with a percentile bootstrap interval (deterministic for a seed)."""
    data = [float(v) for v in values]
    if not data:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    rng = random.Random(seed)
    n = len(data)
    means = sorted(_mean([data[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    alpha = (1 - confidence) / 2
    return Estimate(_mean(data), _percentile(means, alpha), _percentile(means, 1 - alpha), n)


def bootstrap_difference(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """mean(b) - mean(a), resampling each group independently."""
    xs, ys = [float(v) for v in a], [float(v) for v in b]
    if not xs or not ys:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    rng = random.Random(seed)
    diffs = sorted(
        _mean([ys[rng.randrange(len(ys))] for _ in ys])
        - _mean([xs[rng.randrange(len(xs))] for _ in xs])
        for _ in range(resamples)
    )
    alpha = (1 - confidence) / 2
    return Estimate(
        _mean(ys) - _mean(xs),
        _percentile(diffs, alpha),
        _percentile(diffs, 1 - alpha),
        min(len(xs), len(ys)),
    )
