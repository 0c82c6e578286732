"""PostgreSQL's connection pool as Prometheus metrics, read from the pool at each scrape.

What an operator sizing ``--db-pool-size`` needs to see: how many connections are in use, how
many requests wait for one now, and how long requests have waited in all (a rate of it that
grows with load says the pool, not the database, is the bottleneck). psycopg_pool counts these
itself (``AsyncConnectionPool.get_stats()``, a documented method); this module only names them.

Like ``process_*``, the values are those of the process that answers the scrape: with several
workers each has its own pool, and the series show the answering worker's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["PoolCollector", "StatsSource", "pool_metrics"]


class StatsSource(Protocol):
    """What the collector reads: ``psycopg_pool.AsyncConnectionPool`` is one."""

    def get_stats(self) -> dict[str, int]: ...


class PoolCollector(Collector):
    """One scrape reads ``get_stats()`` once; a counter psycopg_pool has not started yet
    (it counts only once something happened) is 0."""

    def __init__(self, pool: StatsSource) -> None:
        self._pool = pool

    def collect(self) -> Iterator[Any]:
        stats = self._pool.get_stats()
        size, idle = stats.get("pool_size", 0), stats.get("pool_available", 0)
        yield GaugeMetricFamily("llamon_db_pool_max", "Connections the PostgreSQL pool may "
                                "open (--db-pool-size)", value=stats.get("pool_max", 0))
        yield GaugeMetricFamily("llamon_db_pool_connections_in_use", "Pooled connections a "
                                "request holds now", value=max(0, size - idle))
        yield GaugeMetricFamily("llamon_db_pool_connections_idle", "Pooled connections open "
                                "and idle", value=idle)
        yield GaugeMetricFamily("llamon_db_pool_waiting", "Requests waiting for a connection "
                                "now", value=stats.get("requests_waiting", 0))
        yield CounterMetricFamily("llamon_db_pool_requests", "Connections lent by the pool",
                                  value=stats.get("requests_num", 0))
        yield CounterMetricFamily("llamon_db_pool_queued", "Requests that found no idle "
                                  "connection and waited", value=stats.get("requests_queued", 0))
        yield CounterMetricFamily("llamon_db_pool_wait_seconds", "Time requests spent waiting "
                                  "for a connection", value=stats.get("requests_wait_ms", 0)
                                  / 1000)
        yield CounterMetricFamily("llamon_db_pool_errors", "Requests for a connection that "
                                  "failed (the pool's timeout)",
                                  value=stats.get("requests_errors", 0))


@contextmanager
def pool_metrics(registry: CollectorRegistry, pool: StatsSource | None) -> Iterator[None]:
    """The pool's series in ``registry`` while the block runs (none without a pool)."""
    if pool is None:
        yield
        return
    collector = PoolCollector(pool)
    registry.register(collector)
    try:
        yield
    finally:
        registry.unregister(collector)
