"""core/ids.py: ``random_id`` gives what ``str(uuid.uuid4())`` gives: RFC 4122 version 4
UUIDs in their canonical text, with all 122 random bits random."""

from __future__ import annotations

import uuid

from llamon_agent.core.ids import random_id


def test_every_id_is_a_canonical_version_4_uuid_and_none_repeats() -> None:
    ids = [random_id() for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == text


def test_each_of_the_122_random_bits_takes_both_values() -> None:
    fixed = uuid.UUID(int=(0xF << 76) | (0x3 << 62))  # the version's and the variant's bits
    seen_set = seen_clear = 0
    for _ in range(2000):
        value = uuid.UUID(random_id()).int
        seen_set |= value
        seen_clear |= ~value & (2**128 - 1)
    random_bits = (2**128 - 1) & ~fixed.int
    assert seen_set & random_bits == random_bits
    assert seen_clear & random_bits == random_bits
    assert bin(random_bits).count("1") == 122
