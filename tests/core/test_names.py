"""Names rota stores: the rules that keep them exact on every backend."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rota.core.names import LIMITS, check_name, name_problem
from rota.errors import ConfigError, InvalidArguments


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("send_email", None),
        ("mail.outbound-2", None),
        ("ünïcødé 名前", None),
        ("x" * 255, None),
        ("x" * 256, "must be 1 to 255 characters, got 256"),
        ("", "must be 1 to 255 characters, got 0"),
        ("key ", "starts or ends with whitespace"),
        ("\tkey", "starts or ends with whitespace"),
        ("a\x00b", "contains a control character"),
        ("a\x7fb", "contains a control character"),
        ("a\ud800b", "is not valid Unicode"),
        (42, "must be a string, got int"),
    ],
)
def test_task_names(value: object, problem: str | None) -> None:
    found = name_problem("task", value)
    assert found == problem if problem is None else problem in (found or "")


def test_queues_are_shorter() -> None:
    assert LIMITS["queue"] == 64
    assert name_problem("queue", "q" * 64) is None
    assert name_problem("queue", "q" * 65) == "queue must be 1 to 64 characters, got 65"


def test_check_name_raises_the_error_of_the_caller() -> None:
    assert check_name("unique_key", "order:1", InvalidArguments) == "order:1"
    with pytest.raises(InvalidArguments, match="unique_key"):
        check_name("unique_key", "order:1 ", InvalidArguments)
    with pytest.raises(ConfigError, match="schedule"):
        check_name("schedule", "", ConfigError)


@given(st.text(max_size=300))
def test_an_accepted_name_is_exact_on_every_backend(value: str) -> None:
    if name_problem("task", value) is None:
        assert value == value.strip() and 0 < len(value) <= 255
        assert value.encode("utf-8").decode("utf-8") == value
        assert all(ord(char) >= 32 and ord(char) != 127 for char in value)
