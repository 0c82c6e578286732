"""The A2A v0.3 JSON Schema the tests validate against is the official one, byte for byte."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

SPEC = Path(__file__).resolve().parent / "spec"


def test_the_schema_copy_matches_its_recorded_sha256() -> None:
    recorded = re.search(r"a2a-v0\.3\.0\.schema\.json \| ([0-9a-f]{64})",
                         (SPEC / "SOURCE.md").read_text())
    assert recorded is not None
    digest = hashlib.sha256((SPEC / "a2a-v0.3.0.schema.json").read_bytes()).hexdigest()
    assert digest == recorded.group(1)
