"""Credential configuration: ``principal=key`` pairs from the environment, a file or Python. A bad
entry is an error naming where it is and never the secret; ``anonymous`` is reserved."""

from __future__ import annotations

import pytest

from llamon_agent.auth import (
    CredentialConfigError,
    KeyTable,
    authenticator_of,
    check_pairs,
    jwt_settings_of,
    parse_file,
    parse_list,
    reviewers_of,
)
from llamon_agent.settings import Settings

SECRET = "Zq9-very-secret-0xDEADBEEF"


def test_a_file_has_one_pair_per_line_with_comments_and_blank_lines() -> None:
    text = f"""# partners
alice = {SECRET}

  # bob rotates monthly
bob=b0b=with=equals==
"""
    assert parse_file(text, "keys.txt") == {"alice": SECRET, "bob": "b0b=with=equals=="}


def test_the_environment_has_comma_separated_pairs() -> None:
    assert parse_list(f" alice={SECRET} ,bob=k2,", "LLAMON_API_KEYS") == {
        "alice": SECRET, "bob": "k2"}


BAD_LINES = [
    (SECRET, "line 2: expected name=key, with '='"),
    (f"anonymous={SECRET}", "line 2: 'anonymous' is reserved"),
    (f"={SECRET}", "line 2: the name before '=' is empty"),
    ("alice=", "line 2: the API key of 'alice' is empty"),
    (f"alice={SECRET} {SECRET}", "line 2: the API key of 'alice' has a space"),
    (f"alice={SECRET}\x07", "line 2: the API key of 'alice' has a space or a control"),
    (f"alice={SECRET}é", "line 2: the API key of 'alice' is not ASCII"),
    (f"ali\x1bce={SECRET}", "line 2: a principal name has no control characters"),
    (f"{'a' * 257}={SECRET}", "line 2: a principal name has 1 to 256 characters"),
    (f"bob={SECRET}", "line 2: 'bob' has the same API key as 'carol'; each needs its own"),
    ("carol=0th3r-k3y", "line 2: 'carol' is configured twice"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_a_bad_line_is_named_and_its_secret_never_shown(line: str, message: str) -> None:
    with pytest.raises(CredentialConfigError) as info:
        parse_file(f"carol={SECRET}\n{line}\n", "keys.txt")
    assert str(info.value).startswith("keys.txt, " + message), str(info.value)
    assert SECRET not in str(info.value)
    assert "0th3r-k3y" not in str(info.value)


def test_a_bad_entry_of_the_environment_is_named_by_its_place() -> None:
    with pytest.raises(CredentialConfigError) as info:
        parse_list(f"alice=k1,{SECRET}", "LLAMON_API_KEYS")
    assert str(info.value) == "LLAMON_API_KEYS, entry 2: expected name=key, with '='"
    with pytest.raises(CredentialConfigError, match="'anonymous' is reserved"):
        check_pairs({"anonymous": SECRET}, "create_app(api_keys=...)")


def test_an_explicit_argument_wins_over_the_environment() -> None:
    settings = Settings(api_keys=f"alice={SECRET}")
    assert authenticator_of(settings, api_keys={}) is None
    auth = authenticator_of(settings)
    assert auth is not None and auth.api_keys is not None and auth.api_keys.names == ["alice"]


def test_jwt_needs_all_three_settings() -> None:
    url = "https://id.example.test/jwks.json"
    assert jwt_settings_of(Settings()) is None
    for partial in [Settings(jwt_jwks_url=url), Settings(jwt_jwks_url=url, jwt_issuer="i"),
                    Settings(jwt_issuer="i", jwt_audience="a")]:
        with pytest.raises(CredentialConfigError, match="LLAMON_JWT_"):
            jwt_settings_of(partial)
    full = jwt_settings_of(Settings(jwt_jwks_url=url, jwt_issuer="i", jwt_audience="a"))
    assert full is not None and (full.jwks_url, full.issuer, full.audience) == (url, "i", "a")


def test_reviewers_are_named_and_the_single_token_is_reviewer() -> None:
    named = reviewers_of(Settings(reviewer_token="t0", reviewer_tokens="alice=t1,bob=t2"))
    assert named.names == ["reviewer", "alice", "bob"]
    assert [named.match(t) for t in ("t0", "t1", "t2", "t3", "")] == [
        "reviewer", "alice", "bob", None, None]
    assert not reviewers_of(Settings())
    with pytest.raises(CredentialConfigError, match="'reviewer' is configured twice"):
        reviewers_of(Settings(reviewer_token="t0", reviewer_tokens="reviewer=t1"))
    with pytest.raises(CredentialConfigError, match="same reviewer token"):
        reviewers_of(Settings(reviewer_token="t0", reviewer_tokens="alice=t0"))


def test_a_key_table_matches_whole_keys_only() -> None:
    table = KeyTable({"alice": "abc", "bob": "abd"})
    assert [table.match(k) for k in ("abc", "abd", "ab", "abcd", "ABC", "ábc", "")] == [
        "alice", "bob", None, None, None, None, None]


def test_settings_read_the_authentication_variables() -> None:
    env = {"LLAMON_API_KEYS": "a=1", "LLAMON_JWT_JWKS_URL": "https://x/jwks",
           "LLAMON_JWT_ISSUER": "iss", "LLAMON_JWT_AUDIENCE": "aud",
           "LLAMON_REVIEWER_TOKENS": "r=2"}
    settings = Settings.from_env(env)
    assert (settings.api_keys, settings.jwt_jwks_url, settings.jwt_issuer,
            settings.jwt_audience, settings.reviewer_tokens) == (
        "a=1", "https://x/jwks", "iss", "aud", "r=2")
    assert Settings.from_env({}).api_keys is None


def test_jwt_without_the_extra_installed_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from llamon_agent.auth import JWTSettings, JWTVerifier

    monkeypatch.setitem(sys.modules, "jwt", None)  # as if PyJWT were not installed
    with pytest.raises(ImportError, match=r"pip install 'llamon-agent\[jwt\]'"):
        JWTVerifier(JWTSettings(jwks_url="https://id.example.test/jwks.json", issuer="i",
                                audience="a"))
