"""Every user-visible text of tool-call review, in English and Indonesian.

Indonesian (``id``) is seed 000's text byte for byte; English (``en``, the default) is our own
wording of the same sentences. Texts the seed does not give (the ``respond`` and ``args_schema``
checks, the A2A summary line) are ours in both languages. The language of a request is the
primary tag of its ``Accept-Language`` (the most preferred supported one); without a supported
tag it is the server's default, ``$LLAMON_LANGUAGE`` (``en`` when unset or unsupported).

The texts the model reads (``REJECTED_BY_USER_MESSAGE``, ``NO_DECISION``) are constants of
seed 000 in English and do not change with the language: they live in ``decisions.py``.
"""

from __future__ import annotations

from typing import Final, Literal

from ..settings import Settings

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "Language",
    "default_language",
    "language_of",
    "resolve",
    "text",
]

Language = Literal["en", "id"]
LANGUAGES: Final = ("en", "id")
DEFAULT_LANGUAGE: Final[Language] = "en"

#: key -> language -> template (``str.format`` fields; ``!r`` where the seed prints a repr)
_TEXTS: Final[dict[str, dict[str, str]]] = {
    "description": {
        "en": "Tool `{name}` is awaiting approval",
        "id": "Tool `{name}` menunggu persetujuan",
    },
    "no_pending_review": {
        "en": "There is no action awaiting approval in this conversation",
        "id": "Tidak ada aksi yang menunggu persetujuan di percakapan ini",
    },
    "review_pending": {
        "en": "There are still actions awaiting approval. Send the decisions first.",
        "id": "Masih ada aksi yang menunggu persetujuan. Kirim keputusannya dulu.",
    },
    "decision_count": {
        "en": "Need {n_actions} decisions (one per action), received {n_decisions}",
        "id": "Butuh {n_actions} keputusan (satu per aksi), diterima {n_decisions}",
    },
    "unknown_decision": {
        "en": "Decision type {type!r} is not recognised. Options: {allowed!r}",
        "id": "Jenis keputusan {type!r} tidak dikenal. Pilihan: {allowed!r}",
    },
    "edit_needs_action": {
        "en": "An 'edit' decision must include 'edited_action'",
        "id": "Keputusan 'edit' wajib menyertakan 'edited_action'",
    },
    "edited_action_shape": {
        "en": "'edited_action' must contain 'name' (text) and 'args' (object)",
        "id": "'edited_action' harus berisi 'name' (teks) dan 'args' (objek)",
    },
    # ours (not in the seed)
    "respond_needs_message": {
        "en": "A 'respond' decision must include 'message' (text)",
        "id": "Keputusan 'respond' wajib menyertakan 'message' (teks)",
    },
    "edited_args_schema": {
        "en": "'edited_action.args' for '{name}' does not match its schema at '{field}': {error}",
        "id": "'edited_action.args' untuk '{name}' tidak sesuai skema di '{field}': {error}",
    },
    "summary": {
        "en": "Awaiting approval: {names}",
        "id": "Menunggu persetujuan: {names}",
    },
}


def default_language() -> Language:
    """The server's default: ``$LLAMON_LANGUAGE`` when it names a supported language."""
    # read per call, not cached: a graph served by no server of ours has no Settings to be
    # handed, and the variable may change between its runs; only this variable is read
    return _supported(Settings.one_from_env("language")) or DEFAULT_LANGUAGE


def resolve(language: str | None) -> Language:
    """A supported language code; anything else is the server's default."""
    return _supported(language) or default_language()


def language_of(accept_language: str | None) -> Language:
    """The language of a request from its ``Accept-Language`` header, matched by primary tag.

    ``id-ID, en;q=0.5`` is ``id``; ``fr, en;q=0.8`` is ``en``; ``fr`` or no header is the
    server's default. Tags with ``q=0`` are refused by the client and never chosen.
    """
    if not accept_language:
        return default_language()
    ranked: list[tuple[float, int, Language]] = []
    for position, item in enumerate(accept_language.split(",")):
        tag, _, params = item.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        supported = _supported(tag.strip().split("-")[0])
        if supported is not None and quality > 0:
            ranked.append((-quality, position, supported))
    return min(ranked)[2] if ranked else default_language()


def text(key: str, language: str | None = None, **fields: object) -> str:
    """The catalogue text ``key`` in ``language`` (resolved), with ``fields`` filled in."""
    return _TEXTS[key][resolve(language)].format(**fields)


def _supported(tag: str | None) -> Language | None:
    if not tag:
        return None
    lowered = tag.strip().lower()
    if lowered == "en":
        return "en"
    if lowered == "id":
        return "id"
    return None
