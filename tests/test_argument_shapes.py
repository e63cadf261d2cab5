"""A task's answer to "can the handler take these arguments?" is remembered per shape of the
arguments (how many positional, which keywords); remembered or not, it is the signature's own."""

from __future__ import annotations

import inspect
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rota import JobContext
from rota.tasks import TaskDefinition


def handler(ctx: JobContext, a: int, b: int = 0, *, c: int = 0) -> None: ...


def direct(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    try:
        inspect.signature(handler).bind(None, *args, **kwargs)
    except TypeError:
        return False
    return True


calls = st.tuples(
    st.lists(st.integers(), max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(), max_size=3),
)


@given(st.lists(calls, min_size=1, max_size=12))
def test_a_remembered_answer_is_the_signatures_own(sequence: list[Any]) -> None:
    task = TaskDefinition(name="t", handler=handler)
    for args, kwargs in sequence:
        assert (task.argument_problem(args, kwargs) is None) == direct(args, kwargs)
    for args, kwargs in sequence:  # asked again: from what is remembered
        assert (task.argument_problem(args, kwargs) is None) == direct(args, kwargs)
