"""compose.yaml (docs/operations.md, "Deployment"): the services it promises, and replicas that
the package would really configure from it.

Every ``LLAMON_*`` variable the file sets must be one ``Settings.from_env`` reads (recorded, not
grepped), so renaming a setting without the file fails here; the replicas' command and
environment go through ``llamon-agent serve``'s own ``main`` (with ``serve`` replaced), so a
renamed flag, a refused value or a non-loopback host without authentication fails too.
PyYAML comes with langchain-core (a dependency), so no new dependency.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
import yaml

from llamon_agent import cli
from llamon_agent.backends.events_url import parse_events_url
from llamon_agent.settings import Settings
from llamon_agent.stores.url import parse_database_url
from tests.conftest import ROOT

COMPOSE = ROOT / "compose.yaml"
REPLICAS = ("agent-1", "agent-2")
#: what a user puts in .env (compose.yaml's header says how)
DOT_ENV = {"POSTGRES_PASSWORD": "pw0123456789", "LLAMON_API_KEYS": "alice=k0123456789abcdef"}
_VARIABLE = re.compile(r"\$\{(\w+)(?::([?-])([^}]*))?\}")


class _Recorder(dict[str, str]):
    """An empty environment that remembers every name looked up in it."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)


def variables_the_package_reads() -> set[str]:
    recorder = _Recorder()
    Settings.from_env(recorder)
    return {name for name in recorder.read if name.startswith("LLAMON_")}


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?error}``."""

    def one(match: re.Match[str]) -> str:
        name, kind, rest = match.groups()
        if env.get(name):
            return env[name]
        if kind == "?":
            raise KeyError(f"{name}: {rest}")
        return rest if kind == "-" else ""

    return _VARIABLE.sub(one, value)


def load() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return data


def replica_environment(service: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    return {name: interpolate(str(value), env) for name, value in service["environment"].items()}


def unknown_variables(compose: dict[str, Any]) -> list[str]:
    known = variables_the_package_reads()
    return sorted({f"{service}: {name}" for service, spec in compose["services"].items()
                   for name in (spec.get("environment") or {})
                   if name.startswith("LLAMON_") and name not in known})


def test_the_services() -> None:
    services = load()["services"]
    assert sorted(services) == ["agent-1", "agent-2", "postgres", "proxy", "redis"]
    for name in REPLICAS:
        assert services[name]["command"] == [
            "llamon-agent", "serve", "--host", "0.0.0.0", "--port", "8000"]
        assert sorted(services[name]["depends_on"]) == ["postgres", "redis"]
        assert services[name]["healthcheck"]["test"][-1].endswith("/readyz', timeout=3)")
    assert sorted(services["proxy"]["depends_on"]) == list(REPLICAS)
    assert services["proxy"]["volumes"] == ["./deploy/nginx.conf:/etc/nginx/conf.d/default.conf:ro"]


def test_every_llamon_variable_is_one_the_package_reads() -> None:
    compose = load()
    assert unknown_variables(compose) == []
    assert {name for spec in compose["services"].values()
            for name in (spec.get("environment") or {}) if name.startswith("LLAMON_")} == {
        "LLAMON_DATABASE_URL", "LLAMON_EVENTS_URL", "LLAMON_LEASE_SECONDS", "LLAMON_API_KEYS",
        "LLAMON_PUBLIC_URL", "LLAMON_REVIEWER_TOKENS", "LLAMON_METRICS_TOKEN", "LLAMON_LOG_FORMAT",
    }


def test_a_renamed_variable_is_caught() -> None:
    """The check above can fail: a name the package does not read is reported (for both
    replicas: they are one YAML anchor)."""
    compose = load()
    environment = compose["services"]["agent-2"]["environment"]
    environment["LLAMON_EVENTS"] = environment.pop("LLAMON_EVENTS_URL")
    assert unknown_variables(compose) == ["agent-1: LLAMON_EVENTS", "agent-2: LLAMON_EVENTS"]


def test_the_secrets_have_no_defaults() -> None:
    """Without .env, `docker compose up` stops with the message, rather than run with a
    made-up password or without API keys."""
    compose = load()
    for name in REPLICAS:
        with pytest.raises(KeyError, match="POSTGRES_PASSWORD"):
            replica_environment(compose["services"][name], {"LLAMON_API_KEYS": "a=b"})
        with pytest.raises(KeyError, match="LLAMON_API_KEYS"):
            replica_environment(compose["services"][name], {"POSTGRES_PASSWORD": "pw"})


def test_the_replicas_settings() -> None:
    compose = load()
    for name in REPLICAS:
        settings = Settings.from_env(replica_environment(compose["services"][name], DOT_ENV))
        assert settings.db == "postgresql://llamon:pw0123456789@postgres:5432/llamon"
        assert parse_database_url(settings.db).kind == "postgres"
        assert settings.events == "redis://redis:6379/0"
        assert parse_events_url(settings.events).kind == "redis"
        assert (settings.lease, settings.log_format) == (30.0, "json")
        assert settings.api_keys == "alice=k0123456789abcdef"
        assert settings.public_url == "http://localhost:8080/"
        assert (settings.reviewer_tokens, settings.metrics_token) == (None, None)
    postgres = compose["services"]["postgres"]["environment"]
    assert (postgres["POSTGRES_USER"], postgres["POSTGRES_DB"]) == ("llamon", "llamon")


def test_a_replica_starts_as_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command and environment through `llamon-agent serve` (not run): accepted, on
    0.0.0.0 because the API keys authenticate, and nothing of the test's environment counts."""
    replica = load()["services"]["agent-1"]
    for name in [n for n in os.environ if n.startswith("LLAMON_")]:
        monkeypatch.delenv(name)
    for name, value in replica_environment(replica, DOT_ENV).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(ROOT)  # the image's working directory: app/ and agent-card.json
    served: list[tuple[Any, Any]] = []
    monkeypatch.setattr(cli, "serve", lambda app, options: served.append((app, options)))
    cli.main(replica["command"][1:])
    [(app, options)] = served
    assert (options.host, options.port, options.log_format) == ("0.0.0.0", 8000, "json")
    assert app.state.authentication is not None


def test_the_proxy_config() -> None:
    """nginx passes server-sent events on at once and to both replicas, on their port."""
    conf = (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    directives = [line.split("#")[0].strip() for line in conf.splitlines()]
    assert "server agent-1:8000;" in directives and "server agent-2:8000;" in directives
    assert "proxy_buffering off;" in directives
    assert "proxy_http_version 1.1;" in directives
    [timeout] = [d for d in directives if d.startswith("proxy_read_timeout ")]
    assert int(timeout.split()[1].rstrip("s;")) > 15  # the server's stream comment interval
