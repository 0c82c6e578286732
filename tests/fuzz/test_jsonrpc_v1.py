"""The JSON-RPC endpoint under generated and mutated A2A v1.0 requests (``cases_v1.py``).

Properties of every reply (``checks_v1.py``): those of the v0.3 requests (HTTP 200 with a
JSON-RPC response, never ``-32603``, the request id echoed); errors in the shape of the version
the request names (v1.0's ``google.rpc`` details list for v1.0, every ``-32009`` included);
results as ProtoJSON of their method's response (no ``kind``, ``TASK_STATE_*``, ``ROLE_*``),
every frame of a stream a ``StreamResponse``, read to the stream's end; a request refused on
purpose (no ``A2A-Version: 1.0``, a tenant, a data part that is not an object) gets exactly its
error. After every example a normal request still works in both versions; afterwards every
stored task reads back over both (``tasks/get`` and ``GetTask``) and through the store, and
every task of the client is in the pages of ``ListTasks``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import example, given, settings

from .cases_v1 import KNOWN_V1, RpcV1Case, rpc_v1_cases
from .checks import new_stats
from .checks_v1 import every_task_reads_back_twice
from .conftest import examples
from .drive import Served
from .drive_v1 import ANSWERED, rpc_v1_case

GENERATED = 300


def _with_known_cases(test: Callable[..., Any]) -> Callable[..., Any]:
    for case in KNOWN_V1:
        test = example(case=case)(test)
    return test


def test_generated_v1_requests(served: Served) -> None:
    stats = new_stats(f"JSON-RPC v1.0, generated from a2a.proto [{served.wire.name}]")

    @settings(max_examples=examples(GENERATED))
    @given(case=rpc_v1_cases(blocking_loans=served.scene.blocking_loans))
    @_with_known_cases
    def one(case: RpcV1Case) -> None:
        rpc_v1_case(served, case, stats)

    one()
    stats.stored = every_task_reads_back_twice(served.scene.rpc, served.wire, served.db)
    assert stats.requests >= examples(GENERATED) // 2, stats.line()
    # the version decides before anything else: a third of the cases name no 1.0 on purpose
    assert stats.reached * 3 >= stats.requests, (
        f"only {stats.reached} of {stats.requests} requests got past the envelope: "
        + stats.line()
    )
    assert stats.kinds[ANSWERED] >= 2, f"hardly a v1.0 answer to a v0.3 question: {stats.line()}"
