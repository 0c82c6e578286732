"""Scraped metrics as data, and the check that every label value comes from a fixed set
(shared by the observability tests and the fuzz suite)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.parser import text_string_to_metric_families

from llamon_agent.server.metrics import OUTCOMES, RPC_METHODS, STATES

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]



def parse_metrics(text: str) -> Series:
    """Every sample: ``(name, sorted labels) -> value``."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(series: Series, name: str, **labels: str) -> float:
    return series.get((name, tuple(sorted(labels.items()))), 0.0)


def route_methods(routes: Iterable[object]) -> set[str]:
    """``"GET /healthz"`` ... for the routes of an app (HEAD is counted as GET)."""
    return {f"{m} {r.path}" for r in routes  # type: ignore[attr-defined]
            for m in (getattr(r, "methods", None) or ()) if m != "HEAD"}


def unfixed_labels(series: Series, routes: set[str], agents: set[str]) -> list[str]:
    """Samples with a label value outside the server's fixed sets (or an unknown label)."""
    allowed = {
        "method": RPC_METHODS | routes | {"other"},
        "outcome": OUTCOMES,
        "state": set(STATES) | {"other"},
        "agent": agents | {"other"},
    }
    wrong = []
    for name, labels in series:
        for key, label in labels:
            if key == "le":
                continue
            if key not in allowed:
                wrong.append(f"{name}: unexpected label {key}")
            elif label not in allowed[key]:
                wrong.append(f"{name} {key}={label!r}")
    return wrong
