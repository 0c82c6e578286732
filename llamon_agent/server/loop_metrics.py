"""Counters and histograms that the event loop updates without a lock, served by prometheus-client.

Every request and every task state change updates a series: twelve updates a HITL round trip.
prometheus-client's ``inc`` and ``observe`` take a lock, check that the series is observable and
look for an exemplar each time; a histogram walks its buckets one by one. That was about 880
bytecodes and 1% of a round trip's instructions (bench/README.md, "Speed, round thirty-three").

These series keep plain numbers instead: a count is ``value += 1``, a histogram finds its bucket
with ``bisect``. No lock is needed because every update runs on the app's event loop thread, one
at a time (the request middleware and the task observer), and a scrape reads them there too
(``/metrics`` is an async route). prometheus-client still does everything else: the registry,
both text formats, the families (:meth:`collect` yields its ``CounterMetricFamily`` and
``Metric``), so a scrape shows exactly what its own ``Counter`` and ``Histogram`` show, the
``_created`` samples included, whenever prometheus-client shows its own (below).

Only a server of one process uses them (``Metrics``): in a worker of ``serve --workers N`` each
value must live in prometheus-client's shared files, so that any worker can answer a scrape
with the sum of all of them.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import Generic, TypeVar

import prometheus_client.metrics
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

__all__ = ["LoopCounter", "LoopHistogram"]

def _shows_created() -> bool:
    """Whether prometheus-client shows its ``_created`` samples now. Its switch has a public
    side (``PROMETHEUS_DISABLE_CREATED_SERIES``, ``disable_created_metrics()`` and
    ``enable_created_metrics()``) but is read only from a private global: read here, the only
    place, so these series follow every way of turning it (prometheus-client is capped below
    1 in pyproject.toml)."""
    return bool(getattr(prometheus_client.metrics, "_use_created", True))


class _Count:
    """One labelled child of a :class:`LoopCounter`."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self) -> None:
        self.value += 1.0


class _Spread:
    """One labelled child of a :class:`LoopHistogram`: the count in each bucket (not yet
    cumulative; the last is ``+Inf``'s) and the sum."""

    __slots__ = ("bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, amount: float) -> None:
        # the first bucket whose upper bound is at or above ``amount`` (``le``); past the last
        # bound, ``+Inf``'s
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.sum += amount


Child = TypeVar("Child", _Count, _Spread)


class _Series(Collector, Generic[Child]):
    """What both kinds share: the name, the label names, the children by label values, and
    the registration (the registry asks :meth:`describe` for the names, so a second series
    of the same name is refused as prometheus-client refuses it)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], *,
                 registry: CollectorRegistry) -> None:
        if not labelnames:
            raise ValueError(f"{name}: a loop series needs at least one label")
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._children: dict[tuple[str, ...], Child] = {}
        registry.register(self)

    def labels(self, *values: str) -> Child:
        """The child of these label values, made the first time they are asked for."""
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name}: {len(self.labelnames)} label values expected "
                             f"({', '.join(self.labelnames)}), got {len(values)}")
        key = tuple(str(v) for v in values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._new_child()
        return child

    def _new_child(self) -> Child:
        raise NotImplementedError

    def _family(self) -> Metric:
        raise NotImplementedError

    def describe(self) -> Iterator[Metric]:
        yield self._family()


class LoopCounter(_Series[_Count]):
    """A labelled counter: ``labels(*values).inc()`` counts one."""

    def _new_child(self) -> _Count:
        return _Count()

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        created = _shows_created()
        for values, child in self._children.items():
            family.add_metric(values, child.value, child.created if created else None)
        yield family


class LoopHistogram(_Series[_Spread]):
    """A labelled histogram: ``labels(*values).observe(seconds)``. ``buckets`` are the upper
    bounds, increasing; ``+Inf`` is added."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], *,
                 buckets: Sequence[float], registry: CollectorRegistry) -> None:
        bounds = tuple(float(b) for b in buckets if b != math.inf)
        if (not bounds or any(math.isnan(b) for b in bounds)
                or any(a >= b for a, b in pairwise(bounds))):
            raise ValueError(f"{name}: buckets must be increasing numbers")
        self._bounds = bounds
        self._le = [floatToGoString(b) for b in (*bounds, math.inf)]
        super().__init__(name, documentation, labelnames, registry=registry)

    def _new_child(self) -> _Spread:
        return _Spread(self._bounds)

    def _family(self) -> Metric:
        return Metric(self.name, self.documentation, "histogram")

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        name, created = self.name, _shows_created()
        for values, child in self._children.items():
            labels = dict(zip(self.labelnames, values, strict=True))
            total = 0.0
            for le, count in zip(self._le, child.counts, strict=True):
                total += count
                family.add_sample(f"{name}_bucket", {**labels, "le": le}, total)
            family.add_sample(f"{name}_count", labels, total)
            if self._bounds[0] >= 0:  # as prometheus-client: no sum beside a negative bucket
                family.add_sample(f"{name}_sum", labels, child.sum)
            if created:
                family.add_sample(f"{name}_created", labels, child.created)
        yield family
