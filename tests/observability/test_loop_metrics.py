"""The lock-free series (``server/loop_metrics.py``) expose what prometheus-client's own
``Counter`` and ``Histogram`` expose for the same updates, in both text formats."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from llamon_agent.server.loop_metrics import LoopCounter, LoopHistogram
from llamon_agent.server.metrics import Metrics

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_CREATED_LINE = re.compile(rb"^(\w+_created(?:\{[^}]*\})?) [0-9.e+]+$", re.MULTILINE)


def _exposed(registry: CollectorRegistry) -> tuple[bytes, bytes]:
    """Both formats, each ``_created`` value (the moment a child was made) blanked."""
    return tuple(_CREATED_LINE.sub(rb"\1 T", text)  # type: ignore[return-value]
                 for text in (generate_latest(registry), generate_openmetrics(registry)))


def _pair() -> tuple[CollectorRegistry, CollectorRegistry]:
    return CollectorRegistry(), CollectorRegistry()


label_values = st.sampled_from(["a", "b", "message/send", 'quote"and\\slash', "ünï"])
amounts = st.one_of(
    st.sampled_from([0.0, *BUCKETS, 30.000001, 1e9]),  # on a bound, and past the last
    st.floats(min_value=0, max_value=100, allow_nan=False),
)


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.tuples(label_values, label_values), max_size=30),
       observed=st.lists(st.tuples(label_values, amounts), max_size=30))
def test_the_same_updates_expose_the_same_text(
    counts: list[tuple[str, str]], observed: list[tuple[str, float]],
) -> None:
    theirs, ours = _pair()
    their_count = Counter("t_requests", "help of the count", ["method", "outcome"],
                          registry=theirs)
    their_spread = Histogram("t_seconds", "help of the spread", ["method"], buckets=BUCKETS,
                             registry=theirs)
    our_count = LoopCounter("t_requests", "help of the count", ["method", "outcome"],
                            registry=ours)
    our_spread = LoopHistogram("t_seconds", "help of the spread", ["method"],
                               buckets=BUCKETS, registry=ours)
    for method, outcome in counts:
        their_count.labels(method, outcome).inc()
        our_count.labels(method, outcome).inc()
    for method, amount in observed:
        their_spread.labels(method).observe(amount)
        our_spread.labels(method).observe(amount)
    assert _exposed(ours) == _exposed(theirs)


def test_a_child_counts_into_the_bucket_of_its_upper_bound() -> None:
    registry = CollectorRegistry()
    spread = LoopHistogram("t", "h", ["m"], buckets=(1.0, 2.0), registry=registry)
    for amount in (0.5, 1.0, 1.5, 2.0, 7.0):
        spread.labels("x").observe(amount)
    assert registry.get_sample_value("t_bucket", {"m": "x", "le": "1.0"}) == 2  # 0.5 and 1.0
    assert registry.get_sample_value("t_bucket", {"m": "x", "le": "2.0"}) == 4
    assert registry.get_sample_value("t_bucket", {"m": "x", "le": "+Inf"}) == 5
    assert registry.get_sample_value("t_count", {"m": "x"}) == 5
    assert registry.get_sample_value("t_sum", {"m": "x"}) == 12.0


def test_a_child_is_kept_once_per_label_values() -> None:
    count = LoopCounter("t", "h", ["a", "b"], registry=CollectorRegistry())
    assert count.labels("x", "y") is count.labels("x", "y")
    assert count.labels("x", "y") is not count.labels("y", "x")


def test_misuse_is_refused_as_prometheus_client_refuses_it() -> None:
    registry = CollectorRegistry()
    count = LoopCounter("t_requests", "h", ["a"], registry=registry)
    with pytest.raises(ValueError, match="1 label values expected"):
        count.labels("x", "y")
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        Counter("t_requests", "h", ["a"], registry=registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        LoopHistogram("t_requests", "h", ["a"], buckets=(1.0,), registry=registry)
    for buckets in [(), (2.0, 1.0), (1.0, 1.0), (math.nan,)]:
        with pytest.raises(ValueError, match="buckets must be increasing"):
            LoopHistogram("t_other", "h", ["a"], buckets=buckets, registry=CollectorRegistry())
    with pytest.raises(ValueError, match="at least one label"):
        LoopCounter("t_bare", "h", [], registry=CollectorRegistry())


def test_one_process_counts_without_a_lock_and_a_worker_in_shared_files(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert isinstance(Metrics(["a"]).requests, LoopCounter)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    shared = Metrics(["a"])
    assert isinstance(shared.requests, Counter)
    assert isinstance(shared.turn_seconds, Histogram)


def test_created_series_follow_prometheus_client_s_switch() -> None:
    """Turned off and on by prometheus-client's public functions, as its own series are."""
    from prometheus_client import disable_created_metrics, enable_created_metrics

    registry = CollectorRegistry()
    LoopCounter("t_c", "h", ["a"], registry=registry).labels("x").inc()
    LoopHistogram("t_h", "h", ["a"], buckets=(1.0,), registry=registry).labels("x").observe(2)
    Counter("t_theirs", "h", ["a"], registry=registry).labels("x").inc()
    shown = generate_latest(registry).decode()
    assert {"t_c_created", "t_h_created", "t_theirs_created"} <= set(shown.split())
    disable_created_metrics()
    try:
        shown = generate_latest(registry).decode()
    finally:
        enable_created_metrics()
    assert "t_c_total" in shown and "t_h_bucket" in shown and "t_theirs_total" in shown
    assert "_created" not in shown


def test_created_series_are_left_out_by_the_environment_variable() -> None:
    script = (
        "from prometheus_client import CollectorRegistry, Counter, generate_latest\n"
        "from llamon_agent.server.loop_metrics import LoopCounter, LoopHistogram\n"
        "r = CollectorRegistry()\n"
        "LoopCounter('t_c', 'h', ['a'], registry=r).labels('x').inc()\n"
        "LoopHistogram('t_h', 'h', ['a'], buckets=(1.0,), registry=r).labels('x').observe(2)\n"
        "Counter('t_theirs', 'h', ['a'], registry=r).labels('x').inc()\n"
        "print(generate_latest(r).decode())\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True,
        env={"PROMETHEUS_DISABLE_CREATED_SERIES": "true", "PATH": ""},
    ).stdout
    assert "t_c_total" in shown and "t_h_bucket" in shown and "t_theirs_total" in shown
    assert "_created" not in shown
