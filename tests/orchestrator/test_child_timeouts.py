"""``ChildTimeouts`` and ``RemoteAgent(..., timeout=...)``: defaults, one number for all,
validation. The defaults are the ones docs/orchestrators.md states."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from llamon_agent.orchestrator import ChildTimeouts, RemoteAgent

DOCS = Path(__file__).resolve().parents[2] / "docs" / "orchestrators.md"


def test_the_defaults_are_the_documented_ones() -> None:
    remote = RemoteAgent("kyc", "http://kyc.example")
    assert remote.timeout == ChildTimeouts(connect=10.0, send=120.0, quiet=60.0)
    assert "`ChildTimeouts(connect=10.0, send=120.0, quiet=60.0)`" in DOCS.read_text()


def test_one_number_applies_to_all_three() -> None:
    assert RemoteAgent("kyc", "http://kyc.example", timeout=5).timeout == ChildTimeouts(
        connect=5.0, send=5.0, quiet=5.0
    )
    own = ChildTimeouts(connect=1, send=2.5, quiet=3)
    assert RemoteAgent("kyc", "http://kyc.example", timeout=own).timeout is own
    assert (own.connect, own.send, own.quiet) == (1.0, 2.5, 3.0)


@pytest.mark.parametrize("value", [0, -1, math.inf, -math.inf, math.nan])
def test_a_timeout_is_positive_and_finite(value: float) -> None:
    with pytest.raises(ValueError) as caught:
        RemoteAgent("kyc", "http://kyc.example", timeout=value)
    assert str(caught.value) == f"ChildTimeouts.connect must be positive and finite, got {value!r}"
    with pytest.raises(ValueError) as caught:
        ChildTimeouts(quiet=value)
    assert str(caught.value) == f"ChildTimeouts.quiet must be positive and finite, got {value!r}"


@pytest.mark.parametrize("value", [True, "5", None])
def test_a_timeout_is_a_number(value: object) -> None:
    with pytest.raises(TypeError) as caught:
        ChildTimeouts(send=value)  # type: ignore[arg-type]
    assert str(caught.value) == f"ChildTimeouts.send must be a number of seconds, got {value!r}"
