"""The dashboard's login sessions and its throttle on failed logins.

Why sessions look like this:

* Each login mints a session of its own: a random nonce, signed with the time it was signed by
  itsdangerous' ``TimestampSigner``.  A second login gets another nonce, so a session cookie
  that leaked once is not everyone's cookie forever.
* The signing key is derived from the dashboard token, so every process serving the same token
  accepts the session (behind a load balancer, across restarts), and changing the token ends
  every session at once.
* A session ends at its max age (``DEFAULT_MAX_AGE`` unless ``create_app(session_max_age=...)``
  says otherwise), checked on the server: the cookie's own expiry is only a hint to the browser.
* Logout revokes the session's nonce: its record is kept until the session would have expired
  anyway, so a copied cookie replayed after logout is refused.  The record lives in the process
  that served the logout: with several dashboard processes, a logout revokes the session there,
  and elsewhere the session ends at its max age.  (Sharing revocations needs shared storage,
  which the dashboard keeps out of the database on purpose; change the token to end every
  session everywhere.)

Failed logins are throttled per client address (``LoginThrottle``), so a token cannot be guessed
at the speed of the network.  Time comes from a ``Clock``, so tests move it instead of sleeping.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import threading
from collections import deque
from datetime import datetime, timedelta

from itsdangerous import BadSignature, TimestampSigner

from rota.core.clock import Clock

DEFAULT_MAX_AGE = timedelta(hours=12)
CLOCK_SKEW = timedelta(seconds=60)
"""How far ahead of this process's clock a session may have been signed (by another process)."""
LOGIN_ATTEMPTS = 5
LOGIN_WINDOW = timedelta(minutes=1)
MAX_CLIENTS = 10_000
"""How many clients' failed attempts are remembered; past it the oldest are forgotten."""


class ClockedSigner(TimestampSigner):
    """A ``TimestampSigner`` that reads the time from a ``Clock`` instead of ``time.time``."""

    def __init__(self, key: bytes, clock: Clock) -> None:
        super().__init__(key, salt="rota.dashboard.session", digest_method=hashlib.sha256)
        self.clock = clock

    def get_timestamp(self) -> int:
        return int(self.clock.now().timestamp())


class Sessions:
    """Minting, checking and revoking the signed session values of one dashboard."""

    def __init__(self, key: bytes, max_age: timedelta, clock: Clock) -> None:
        self.signer = ClockedSigner(key, clock)
        self.max_age = max_age
        self.clock = clock
        self.revoked: dict[str, datetime] = {}
        self.lock = threading.Lock()

    def mint(self) -> tuple[str, str]:
        """A new session: its nonce and the signed value its cookie holds."""
        nonce = secrets.token_urlsafe(24)
        return nonce, self.signer.sign(nonce).decode()

    def nonce(self, value: str) -> str | None:
        """The nonce of the session ``value`` holds, or ``None`` if it is forged, expired,
        signed in the future or revoked."""
        signed = self.signed(value)
        if signed is None:
            return None
        with self.lock:
            return None if signed[0] in self.revoked else signed[0]

    def revoke(self, value: str) -> None:
        """End the session ``value`` holds (if it is one) in this process, until its expiry."""
        signed = self.signed(value)
        if signed is None:
            return
        nonce, signed_at = signed
        now = self.clock.now()
        with self.lock:
            for old in [n for n, expiry in self.revoked.items() if expiry < now]:
                del self.revoked[old]
            self.revoked[nonce] = signed_at + self.max_age

    def signed(self, value: str) -> tuple[str, datetime] | None:
        """The nonce and signing time of an authentic, unexpired session value."""
        if not value or not value.isascii():
            return None
        try:
            nonce, signed_at = self.signer.unsign(value, return_timestamp=True)
        except BadSignature:
            return None
        age = self.clock.now() - signed_at
        if age > self.max_age or age < -CLOCK_SKEW:
            return None
        return nonce.decode(), signed_at


class LoginThrottle:
    """At most ``attempts`` failed logins per client within ``window``; a success forgets them.

    Over the limit, every attempt of that client is refused, the right token too, until its
    oldest failure leaves the window: guessing gets no faster by sending the token among the
    guesses.  Clients are told apart by address, so behind a reverse proxy run uvicorn with
    ``--proxy-headers`` (and ``--forwarded-allow-ips``), or every user shares one budget.
    """

    def __init__(
        self,
        clock: Clock,
        attempts: int = LOGIN_ATTEMPTS,
        window: timedelta = LOGIN_WINDOW,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.clock = clock
        self.attempts = attempts
        self.window = window
        self.max_clients = max_clients
        self.failures: dict[str, deque[datetime]] = {}
        self.lock = threading.Lock()

    def retry_after(self, client: str) -> int | None:
        """Whole seconds until ``client`` may try again, or ``None`` if it may now."""
        now = self.clock.now()
        with self.lock:
            failures = self.failures.get(client)
            if failures is None:
                return None
            while failures and failures[0] <= now - self.window:
                failures.popleft()
            if not failures:
                del self.failures[client]
                return None
            if len(failures) < self.attempts:
                return None
            wait = (failures[0] + self.window - now).total_seconds()
            return max(1, math.ceil(wait))

    def failed(self, client: str) -> None:
        with self.lock:
            self.failures.setdefault(client, deque(maxlen=self.attempts)).append(self.clock.now())
            while len(self.failures) > self.max_clients:
                del self.failures[next(iter(self.failures))]

    def succeeded(self, client: str) -> None:
        with self.lock:
            self.failures.pop(client, None)
