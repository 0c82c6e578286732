"""Implementations of the runtime's seams that work across processes (replicas).

``redis_events.RedisPublisher`` (an ``EventPublisher``: events on a Redis stream per task) and
``pg_claims.PostgresClaims`` (a ``ContextClaims``: claim rows in PostgreSQL). Each needs its
optional extra (``[redis]``, ``[postgres]``), so this package imports neither: import the module.
The layer sits between ``server`` (which wires them) and ``runtime`` (whose seams they fill).
"""
