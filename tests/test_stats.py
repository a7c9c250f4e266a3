"""The experiment's statistics on known inputs."""

from __future__ import annotations

import math

from grinta_jupyter.experiment.stats import _percentile, bootstrap_difference, bootstrap_mean


def test_constant_data_has_a_zero_width_interval():
    e = bootstrap_mean([3.0] * 10)
    assert (e.mean, e.low, e.high, e.n) == (3.0, 3.0, 3.0, 10)


def test_interval_contains_the_mean_and_narrows_with_more_data():
    small = bootstrap_mean([0, 1] * 5, seed=1)
    large = bootstrap_mean([0, 1] * 200, seed=1)
    assert small.low < 0.5 < small.high and large.low < 0.5 < large.high
    assert (large.high - large.low) < (small.high - small.low) / 3
    # The normal approximation for a proportion: 1.96 * sqrt(p(1-p)/n).
    assert math.isclose(large.high - large.low, 2 * 1.96 * math.sqrt(0.25 / 400), rel_tol=0.2)


def test_bootstrap_is_deterministic_for_a_seed():
    data = [1, 5, 2, 8, 3]
    assert bootstrap_mean(data, seed=7) == bootstrap_mean(data, seed=7)


def test_difference_of_clearly_separated_groups_excludes_zero():
    d = bootstrap_difference([0, 0, 1, 0, 0, 0, 1, 0] * 5, [1, 1, 1, 0, 1, 1, 1, 1] * 5)
    assert math.isclose(d.mean, 0.875 - 0.25)
    assert d.low > 0 and d.high <= 1


def test_difference_of_identical_groups_straddles_zero():
    d = bootstrap_difference([1, 2, 3, 4] * 5, [1, 2, 3, 4] * 5)
    assert d.mean == 0 and d.low < 0 < d.high


def test_empty_and_percentiles():
    assert bootstrap_mean([]).n == 0 and str(bootstrap_mean([])) == "n/a"
    assert _percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5 and _percentile([5.0], 0.9) == 5.0
