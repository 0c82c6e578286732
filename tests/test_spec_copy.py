"""The A2A v0.3 JSON Schema the tests validate against is the official one, byte for byte."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pydantic import BaseModel

SPEC = Path(__file__).resolve().parent / "spec"


def test_the_schema_copy_matches_its_recorded_sha256() -> None:
    recorded = re.search(r"a2a-v0\.3\.0\.schema\.json \| ([0-9a-f]{64})",
                         (SPEC / "SOURCE.md").read_text())
    assert recorded is not None
    digest = hashlib.sha256((SPEC / "a2a-v0.3.0.schema.json").read_bytes()).hexdigest()
    assert digest == recorded.group(1)


V1 = SPEC / "v1.0"


def _recorded_v1_digests() -> dict[str, str]:
    """``file here`` -> sha256, from the table of ``tests/spec/v1.0/SOURCE.md``."""
    rows = re.findall(r"^\| ([\w.-]+) \| [^|]+ \| ([0-9a-f]{64}) \|$",
                      (V1 / "SOURCE.md").read_text(), re.M)
    return dict(rows)


def test_the_v1_0_copies_match_their_recorded_sha256() -> None:
    recorded = _recorded_v1_digests()
    assert set(recorded) == {"a2a.proto", "specification.md"}
    for name, digest in recorded.items():
        assert hashlib.sha256((V1 / name).read_bytes()).hexdigest() == digest, name
    assert (V1 / "LICENSE").read_text().startswith("\n                                 Apache License")


def _v1_models() -> dict[str, type[BaseModel]]:
    from llamon_agent.a2a import v1

    return {name: model for name, model in vars(v1).items()
            if isinstance(model, type) and issubclass(model, BaseModel)
            and model.__module__ == v1.__name__ and not name.startswith("_")}


def _json_names(model: type[BaseModel]) -> dict[str, bool]:
    """A model's fields by JSON name (its alias), each with whether it is required."""
    return {(info.alias or name): info.is_required() for name, info in model.model_fields.items()}


def test_every_v1_0_model_has_exactly_the_fields_of_its_proto_message() -> None:
    """``a2a/v1.py`` against ``a2a.proto``: the same JSON names, and a model requires a field
    exactly when the proto marks it REQUIRED; a drift on either side fails here."""
    from tests.proto import proto

    messages = proto().messages
    models = _v1_models()
    assert set(models) == {
        "AuthenticationInfo", "CancelTaskRequest", "DeleteTaskPushNotificationConfigRequest",
        "GetExtendedAgentCardRequest", "GetTaskPushNotificationConfigRequest", "GetTaskRequest",
        "ListTaskPushNotificationConfigsRequest", "ListTasksRequest", "Message", "Part",
        "SendMessageConfiguration", "SendMessageRequest", "SubscribeToTaskRequest",
        "TaskPushNotificationConfig",
    }
    for name, model in models.items():
        fields = messages[name].fields
        assert _json_names(model) == {json: f.required for json, f in fields.items()}, name


def test_the_v1_0_enum_names_are_the_protos_in_order() -> None:
    from llamon_agent.a2a import v1
    from tests.proto import proto

    assert proto().enums["TaskState"].values == v1.TASK_STATES
    assert proto().enums["Role"].values == v1.ROLES
