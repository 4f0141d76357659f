"""Reading a threshold between bucket bounds: which bounds, and PromQL that agrees with the Python.

The interpolation the rules do in PromQL is checked by promtool on random cumulative histograms against
`monitor.histogram.fraction_over_groups`, the function the observer reads SLO shares with: the two must give the
same share to 1e-6. The observer's quantiles (`monitor.histogram.merged_quantile`) are checked against PromQL's
own histogram_quantile on the same series.
"""

from __future__ import annotations

import math
import random
import subprocess
from pathlib import Path

import pytest
import yaml

from monitor import queries as q
from monitor.histogram import buckets_by_group, fraction_over_groups, merged_quantile
from monitor.rules.buckets import (
    ITL_BOUNDS,
    ITL_BOUNDS_BEFORE_15202,
    TTFT_BOUNDS,
    TTFT_BOUNDS_BEFORE_15202,
    Bracket,
    bracket,
    latency_bracket,
)
from monitor.rules.promql import le_matcher, number, share_above
from monitor.sizing.buckets import build_1_2_5_buckets
from tests.harness.stack import require_binaries


@pytest.mark.parametrize(
    ("threshold", "current", "old", "expected"),
    [
        pytest.param(1.2, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202, Bracket(1.2, 1.0, 2.5),
                     id="TTFT 1.2 s lies between the 1 s and 2.5 s bounds of both lists"),
        pytest.param(6.0, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202, Bracket(6.0, 5.0, 7.5),
                     id="TTFT 6 s between 5 s and 7.5 s"),
        pytest.param(0.5, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202, Bracket(0.5, 0.25, 0.5),
                     id="TTFT 500 ms is a bound: read as is"),
        pytest.param(0.0005, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202, Bracket(0.0005, 0.0, 0.001),
                     id="below the first bound the bucket starts at 0"),
        pytest.param(15.0, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202, Bracket(15.0, 10.0, 20.0),
                     id="TTFT 15 s is past the old list (10 s): the current list's 10-20 s bucket"),
        pytest.param(0.04, ITL_BOUNDS, ITL_BOUNDS_BEFORE_15202, Bracket(0.04, 0.025, 0.05),
                     id="TPOT 40 ms between 25 ms and 50 ms"),
        pytest.param(4.0, ITL_BOUNDS, ITL_BOUNDS_BEFORE_15202, Bracket(4.0, 2.5, 5.0),
                     id="TPOT 4 s is past the old list (2.5 s): the current list's 2.5-5 s bucket"),
    ],
)  # fmt: skip
def test_latency_thresholds_pick_bounds_both_lists_have_where_they_can(
    threshold: float, current: tuple[float, ...], old: tuple[float, ...], expected: Bracket
) -> None:
    assert latency_bracket(threshold, current, old) == expected


def test_the_old_lists_are_the_start_of_the_current_ones() -> None:
    assert TTFT_BOUNDS[: len(TTFT_BOUNDS_BEFORE_15202)] == TTFT_BOUNDS_BEFORE_15202
    assert ITL_BOUNDS[: len(ITL_BOUNDS_BEFORE_15202)] == ITL_BOUNDS_BEFORE_15202
    assert max(TTFT_BOUNDS_BEFORE_15202) == 10.0 and max(ITL_BOUNDS_BEFORE_15202) == 2.5


def test_a_latency_threshold_above_every_bucket_cannot_be_read() -> None:
    with pytest.raises(ValueError, match="above the histogram's last bucket bound"):
        latency_bracket(3000.0, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202)


def test_a_token_threshold_above_the_last_bound_is_read_at_it() -> None:
    b = bracket(43_800.0, build_1_2_5_buckets(32_768))
    assert (b.lower, b.upper, b.beyond) == (20_000.0, None, True)


@pytest.mark.parametrize(
    ("bound", "matcher"),
    [
        pytest.param(1.0, 'le=~"1(\\\\.0)?"', id="a whole bound matches 1.0 (prometheus_client) and 1 (others)"),
        pytest.param(2.5, 'le="2.5"', id="a fraction is matched as written"),
        pytest.param(20_000.0, 'le=~"20000(\\\\.0)?"', id="token bounds too"),
        pytest.param(math.inf, 'le="+Inf"', id="the +Inf bucket"),
    ],
)  # fmt: skip
def test_le_matchers(bound: float, matcher: str) -> None:
    assert le_matcher(bound) == matcher


def test_numbers_drop_float_noise() -> None:
    assert [number(x) for x in (1.0, 0.6000000000000001, 2437.5, 14.4)] == ["1", "0.6", "2437.5", "14.4"]


THRESHOLDS = (0.0005, 0.02, 0.5, 1.2, 6.0, 15.0)


def test_promql_interpolation_agrees_with_the_python(tmp_path: Path) -> None:
    """One model per threshold, random cumulative TTFT buckets (current list); promtool evaluates the rule
    expression, `fraction_over_groups` (what the observer calls) gives the expected share."""
    rng = random.Random(7)
    series: list[dict[str, str]] = []
    checks: list[dict[str, object]] = []
    for i, threshold in enumerate(THRESHOLDS):
        per_minute, total = [], 0
        for _ in (*TTFT_BOUNDS, math.inf):
            total += rng.randint(0, 40)
            per_minute.append(total)
        model = f"m{i}"
        for le, count in zip((*TTFT_BOUNDS, math.inf), per_minute, strict=True):
            le_text = "+Inf" if math.isinf(le) else repr(le)
            series.append({"series": f'vllm:time_to_first_token_seconds_bucket{{tier="t",model_name="{model}",'
                                     f'le="{le_text}"}}', "values": f"0+{count}x10"})  # fmt: skip
        pairs = zip((*TTFT_BOUNDS, math.inf), per_minute, strict=True)
        samples = [({"le": str(le), "model_name": model}, float(c)) for le, c in pairs]
        expected = fraction_over_groups(samples, threshold).fraction
        assert expected is not None
        b = latency_bracket(threshold, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202)
        expr = share_above(q.TTFT_BUCKETS, ('tier="t"', f'model_name="{model}"'), "5m", b)
        checks.append({"expr": f"round(({expr}) * 1e6)", "eval_time": "5m",
                       "exp_samples": [{"labels": "{}", "value": round(expected * 1e6)}]})  # fmt: skip
        checks.append(_quantile_check(model, samples, (0.5, 0.95, 0.99)[i % 3]))
    series_old, check_old = _a_replica_on_the_old_list(rng)
    series += series_old
    checks.append(check_old)
    (tmp_path / "empty.yml").write_text("groups: []\n")
    test = {"rule_files": ["empty.yml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": checks}]}  # fmt: skip
    (tmp_path / "interpolation.test.yml").write_text(yaml.safe_dump(test, width=1_000_000))
    require_binaries()
    done = subprocess.run(["promtool", "test", "rules", "interpolation.test.yml"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def _a_replica_on_the_old_list(rng: random.Random) -> tuple[list[dict[str, str]], dict[str, object]]:
    """Threshold 15 s needs the 20 s bound, which a pre-#15202 model lacks: with the guard, that model counts
    neither as good nor in the total, and the share is the current-list model's alone."""
    series, counts = [], {}
    for model, bounds in (("new", TTFT_BOUNDS), ("old", TTFT_BOUNDS_BEFORE_15202)):
        total, per_minute = 0, []
        for le in (*bounds, math.inf):
            total += rng.randint(1, 40)
            per_minute.append((le, total))
            le_text = "+Inf" if math.isinf(le) else repr(le)
            series.append({"series": f'vllm:time_to_first_token_seconds_bucket{{tier="g",model_name="{model}",'
                                     f'le="{le_text}"}}', "values": f"0+{total}x10"})  # fmt: skip
        counts[model] = per_minute
    b = latency_bracket(15.0, TTFT_BOUNDS, TTFT_BOUNDS_BEFORE_15202)
    expr = share_above(q.TTFT_BUCKETS, ('tier="g"',), "5m", b, guard=True)
    samples = [({"le": str(le), "model_name": m}, float(c)) for m, pairs in counts.items() for le, c in pairs]
    expected = fraction_over_groups(samples, 15.0).fraction  # the old-list model drops out, as in PromQL
    assert expected is not None
    return series, {"expr": f"round(({expr}) * 1e6)", "eval_time": "5m",
                    "exp_samples": [{"labels": "{}", "value": round(expected * 1e6)}]}  # fmt: skip


def _quantile_check(model: str, samples: list[tuple[dict[str, str], float]], quantile: float) -> dict[str, object]:
    """PromQL's histogram_quantile over one model's buckets (a rate: the series grow by `count` a minute)
    against `merged_quantile` over the same counts per second. A rank in the +Inf bucket reads as the last
    finite bound in both."""
    per_second = [({"le": labels["le"]}, count / 60) for labels, count in samples]
    expected = merged_quantile(quantile, list(buckets_by_group(per_second).values()))
    assert expected is not None
    sel = f'tier="t",model_name="{model}"'
    expr = f"histogram_quantile({quantile}, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{{sel}}}[5m])))"
    return {"expr": f"round(({expr}) * 1e6)", "eval_time": "5m",
            "exp_samples": [{"labels": "{}", "value": round(expected * 1e6)}]}  # fmt: skip
