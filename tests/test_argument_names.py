"""A misspelt keyword at enqueue is named, with the parameter or the ``queue()`` option nearest to
it, rather than reported as the parameter it failed to give."""

from __future__ import annotations

import pytest

from rota import Enqueue, InvalidArguments, JobContext, Rota

pytestmark = pytest.mark.parametrize("db", ["sqlite"], indirect=True)  # binding reads nothing


def refusal(call: object) -> str:
    assert callable(call)
    with pytest.raises(InvalidArguments) as raised:
        call()
    assert raised.value.code == "INVALID_ARGUMENTS"
    return str(raised.value)


def test_a_misspelt_parameter_is_named_with_the_one_meant(rota: Rota) -> None:
    @rota.task
    def send_email(ctx: JobContext, to: str, subject: str, recipient: str = "") -> None: ...

    assert refusal(lambda: rota.queue(send_email, to="a", subjet="x")) == (
        "task 'send_email': got an unexpected keyword argument 'subjet' (did you mean 'subject'?)"
    )
    assert refusal(lambda: rota.queue(send_email, "a", "x", recipent="b")) == (
        "task 'send_email': got an unexpected keyword argument 'recipent' "
        "(did you mean 'recipient'?)"
    )
    batch = [Enqueue(send_email, "a", "x"), Enqueue(send_email, "a", subjct="x", zzz=1)]
    assert refusal(lambda: rota.queue_many(batch)) == (
        "task 'send_email': got an unexpected keyword argument 'subjct' (did you mean "
        "'subject'?); got an unexpected keyword argument 'zzz'"
    )
    assert "missing a required argument: 'subject'" in refusal(lambda: rota.queue(send_email, "a"))
    assert rota.jobs() == [], "nothing was written"


def test_a_misspelt_enqueue_option_is_named_with_the_option_meant(rota: Rota) -> None:
    @rota.task
    def send_email(ctx: JobContext, to: str) -> None: ...

    @rota.task
    def cleanup() -> None: ...

    assert refusal(lambda: rota.queue(send_email, "a", dealy=5)) == (
        "task 'send_email': got an unexpected keyword argument 'dealy' (did you mean the "
        "enqueue option 'delay'?)"
    )
    assert refusal(lambda: rota.queue(send_email, "a", unique_kye="k")).endswith(
        "(did you mean the enqueue option 'unique_key'?)"
    )
    assert refusal(lambda: rota.queue(cleanup, priorty=1)) == (
        "task 'cleanup': the handler takes no parameters, so it takes no arguments; got an "
        "unexpected keyword argument 'priorty' (did you mean the enqueue option 'priority'?)"
    )
    assert rota.jobs() == [], "nothing was written"
