"""Messages as plain dicts and the add_messages reducer, with no LangChain installed."""

from __future__ import annotations

import pytest

from ttcli import AIMessage, HumanMessage, RemoveMessage, add_messages
from ttcli.graph.messages import REMOVE_ALL_MESSAGES, Message, to_message


@pytest.mark.parametrize(
    ("given", "expected_type", "content"),
    [
        (("user", "hi"), "human", "hi"),
        (("assistant", "yo"), "ai", "yo"),
        (("system", "be brief"), "system", "be brief"),
        ({"role": "user", "content": "dict"}, "human", "dict"),
        ({"type": "ai", "content": "typed"}, "ai", "typed"),
        ("plain string", "human", "plain string"),
        (AIMessage("obj"), "ai", "obj"),
    ],
    ids=[
        "tuple-user",
        "tuple-assistant",
        "tuple-system",
        "role-dict",
        "type-dict",
        "string",
        "message",
    ],
)
def test_messages_coerce_to_plain_dicts(given: object, expected_type: str, content: str) -> None:
    message = to_message(given)
    assert isinstance(message, dict)
    assert message["type"] == message.type == expected_type
    assert message.content == content


@pytest.mark.parametrize(
    "bad",
    [("robot", "x"), {"content": "no role"}, 42],
    ids=["unknown-role", "no-role", "not-a-message"],
)
def test_bad_messages_are_rejected_with_a_reason(bad: object) -> None:
    with pytest.raises(ValueError, match="role|Unsupported"):
        to_message(bad)


def test_add_messages_assigns_ids_and_appends() -> None:
    merged = add_messages([("user", "hi")], [("assistant", "hello")])
    assert [m.type for m in merged] == ["human", "ai"]
    assert all(isinstance(m.id, str) and m.id for m in merged)
    assert len({m.id for m in merged}) == 2


def test_same_id_replaces_in_place() -> None:
    merged = add_messages(
        [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        [AIMessage("b2", id="2"), HumanMessage("c", id="3")],
    )
    assert [(m.id, m.content) for m in merged] == [("1", "a"), ("2", "b2"), ("3", "c")]


def test_remove_message_deletes_by_id() -> None:
    merged = add_messages(
        [HumanMessage("a", id="1"), AIMessage("b", id="2")], [RemoveMessage(id="1")]
    )
    assert [m.id for m in merged] == ["2"]


def test_remove_all_clears_then_appends_what_follows() -> None:
    merged = add_messages(
        [HumanMessage("a", id="1")],
        [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("z", id="9")],
    )
    assert [m.id for m in merged] == ["9"]


def test_removing_an_unknown_id_is_an_error() -> None:
    with pytest.raises(ValueError, match="doesn't exist \\('nope'\\)"):
        add_messages([HumanMessage("a", id="1")], [RemoveMessage(id="nope")])


def test_add_messages_accepts_a_single_message_and_leaves_inputs_alone() -> None:
    original = HumanMessage("a")
    merged = add_messages([], original)
    assert merged[0].content == "a" and merged[0].id
    assert original.id is None


def test_message_reads_like_langchain_and_compares_like_a_dict() -> None:
    message = AIMessage("hi", id="1")
    assert message == {"type": "ai", "content": "hi", "id": "1"}
    assert repr(message) == "AIMessage(content='hi', id='1')"
    assert repr(Message("x", type="tool", id="2")) == "Message(type='tool', content='x', id='2')"
    # fields LangChain's classes always have read as their defaults, without being stored
    assert (message.tool_calls, message.name, message.additional_kwargs) == ([], None, {})
    assert "tool_calls" not in message
    with pytest.raises(AttributeError):
        _ = message.no_such_field
