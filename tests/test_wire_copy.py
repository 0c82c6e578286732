"""``WireModel.model_copy``: pydantic's copy, made faster (bench/README.md, "Speed, round
thirty"). It is the same copy for every wire model, which holds only while no wire model
keeps extra keys or private attributes: checked here for every one of them."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import llamon_agent.a2a.v1  # noqa: F401  # its wire models too
from llamon_agent.a2a.types import (
    Artifact,
    DataPart,
    Message,
    Task,
    TaskStatus,
    TextPart,
    WireModel,
)


def every_wire_model() -> list[type[WireModel]]:
    found, todo = [], [WireModel]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_no_wire_model_keeps_extra_keys_or_private_attributes() -> None:
    models = every_wire_model()
    assert len(models) > 20
    for cls in models:
        assert cls.model_config.get("extra") != "allow", cls
        assert not cls.__private_attributes__, cls


def a_task() -> Task:
    question = Message(role="agent", parts=[TextPart(kind="text", text="which day?")],
                       message_id="m-2", kind="message")
    return Task(
        id="t-1", context_id="c-1", kind="task",
        status=TaskStatus(state="input-required", message=question),
        history=[Message(role="user", parts=[DataPart(kind="data", data={"n": 1})],
                         message_id="m-1", kind="message")],
        metadata={"k": "v"},
    )


def pydantics(model: BaseModel, **kwargs: Any) -> BaseModel:
    return BaseModel.model_copy(model, **kwargs)


@pytest.mark.parametrize("update", [
    None, {}, {"status": TaskStatus(state="completed")},
    {"artifacts": [Artifact(artifact_id="a-1", parts=[TextPart(kind="text", text="done")])],
     "metadata": None},
    {"not_a_field": 3},
])
def test_a_copy_is_pydantics_copy(update: dict[str, Any] | None) -> None:
    task = a_task()
    ours, theirs = task.model_copy(update=update), pydantics(task, update=update)
    assert type(ours) is Task
    assert ours.__dict__ == theirs.__dict__
    assert ours.model_fields_set == theirs.model_fields_set
    assert ours.__pydantic_extra__ == theirs.__pydantic_extra__
    assert ours.__pydantic_private__ == theirs.__pydantic_private__
    assert ours == theirs
    assert ours.to_json() == theirs.to_json()  # type: ignore[attr-defined]


def test_a_copy_is_shallow_and_its_own() -> None:
    task = a_task()
    copied = task.model_copy(update={"status": TaskStatus(state="completed")})
    assert copied.history is task.history  # shallow, as pydantic's
    assert task.status.state == "input-required"
    assert copied.model_fields_set is not task.model_fields_set
    copied.model_fields_set.add("artifacts")
    assert "artifacts" not in task.model_fields_set
    assert "status" in copied.model_fields_set


def test_a_deep_copy_is_pydantics() -> None:
    task = a_task()
    deep = task.model_copy(update={"metadata": {"x": 1}}, deep=True)
    assert deep.history is not task.history
    assert deep.history == task.history
    assert deep.metadata == {"x": 1}
