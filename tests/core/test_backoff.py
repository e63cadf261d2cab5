from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rota.core.backoff import RetryPolicy, retry_delay

policies = st.builds(
    RetryPolicy,
    retries=st.integers(0, 50),
    delay=st.floats(0, 600),
    cap=st.floats(0, 86_400),
    jitter=st.floats(0, 1),
)


@given(policy=policies, attempt=st.integers(1, 200), seed=st.integers())
def test_delay_stays_within_its_jitter_band_and_under_the_cap(
    policy: RetryPolicy, attempt: int, seed: int
) -> None:
    base = min(policy.cap, policy.delay * 2.0 ** (attempt - 1))
    delay = retry_delay(policy, attempt, random.Random(seed))
    assert base * (1 - policy.jitter) - 1e-9 <= delay <= base + 1e-9
    assert delay <= policy.cap + 1e-9


@given(policy=policies, attempt=st.integers(1, 100))
def test_upper_bound_never_decreases_with_attempts(policy: RetryPolicy, attempt: int) -> None:
    no_jitter = RetryPolicy(policy.retries, policy.delay, policy.cap, jitter=0)
    rng = random.Random(0)
    assert retry_delay(no_jitter, attempt + 1, rng) >= retry_delay(no_jitter, attempt, rng)


def test_exponential_from_the_base_delay() -> None:
    policy = RetryPolicy(retries=5, delay=10, cap=3600, jitter=0)
    rng = random.Random(1)
    assert [retry_delay(policy, n, rng) for n in (1, 2, 3, 4)] == [10, 20, 40, 80]
    assert retry_delay(policy, 30, rng) == 3600


def test_retries_mean_at_most_retries_plus_one_attempts() -> None:
    assert RetryPolicy(retries=3).max_attempts == 4
    assert RetryPolicy(retries=0).max_attempts == 1


@pytest.mark.parametrize("bad", [{"retries": -1}, {"delay": -1.0}, {"cap": -5.0}, {"jitter": 1.5}])
def test_invalid_policies_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be"):
        RetryPolicy(**bad)  # type: ignore[arg-type]
