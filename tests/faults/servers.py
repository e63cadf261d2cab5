"""Taking the real database servers away from running workers, and giving them back.

PostgreSQL is stopped and started in a cluster of the test's own (tests/faults/own_postgres.py).
MariaDB is never stopped: other work may share the server, so its connections are killed with
``KILL CONNECTION`` (they belong to a user made for the test), and "down at start" is a port
where nothing listens until a forwarder to the real server opens it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
import uuid
from collections.abc import Iterator

from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests.conftest import Database


@contextlib.contextmanager
def mariadb_user(db: Database, password: str | bytes | None = None) -> Iterator[str]:
    """A user of its own for the workers, so that killing its connections kills only theirs.

    A ``password`` string is set as the ``mariadb`` client would set it over a UTF-8 connection
    (the server hashes its UTF-8 bytes); bytes are hashed as they are, for a password in another
    encoding, and the URL then holds them as Python decodes them (lone surrogates).
    """
    name = f"rota_{uuid.uuid4().hex[:12]}"
    engine = db.engine()
    database = make_url(db.url).database
    identified, parameters = "", {}
    if isinstance(password, str):
        identified, parameters = " IDENTIFIED BY :password", {"password": password}
    elif password is not None:
        identified, parameters = " IDENTIFIED BY PASSWORD :hash", {"hash": native_hash(password)}
    with engine.begin() as connection:
        connection.execute(text(f"CREATE USER '{name}'@'%'{identified}"), parameters)
        connection.execute(text(f"GRANT ALL ON `{database}`.* TO '{name}'@'%'"))
    url = make_url(db.url).set(username=name, password=None if password is None else "-")
    written = url.render_as_string(False)
    if isinstance(password, bytes):  # SQLAlchemy cannot quote lone surrogates: only ASCII is
        written = written.replace(":-@", f":{ascii_quoted(os.fsdecode(password))}@", 1)
    elif password is not None:
        written = url.set(password=password).render_as_string(False)
    try:
        yield written
    finally:
        with engine.begin() as connection:
            for row in connection.execute(
                text("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = :user"),
                {"user": name},
            ):
                with contextlib.suppress(Exception):
                    connection.execute(text(f"KILL CONNECTION {int(row.ID)}"))
            connection.execute(text(f"DROP USER '{name}'@'%'"))
        engine.dispose()


def ascii_quoted(text: str) -> str:
    """``text`` with its ASCII punctuation percent-encoded and every other character as it is."""
    return "".join(c if c.isalnum() or ord(c) > 127 else f"%{ord(c):02X}" for c in text)


def native_hash(password: bytes) -> str:
    """``mysql_native_password``'s hash of these bytes: ``*`` and SHA1(SHA1(password))."""
    return "*" + hashlib.sha1(hashlib.sha1(password).digest()).hexdigest().upper()


def kill_connections(db: Database, user: str) -> int:
    """``KILL CONNECTION`` every session of ``user``; return how many there were."""
    engine = db.engine()
    try:
        with engine.begin() as connection:
            ids = connection.execute(
                text("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = :user"),
                {"user": user},
            ).scalars()
            killed = 0
            for session in list(ids):
                with contextlib.suppress(Exception):  # it may have closed meanwhile
                    connection.execute(text(f"KILL CONNECTION {int(session)}"))
                    killed += 1
            return killed
    finally:
        engine.dispose()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Forwarder:
    """Listens on ``port`` and pipes every connection to ``target``: the server "comes up"."""

    def __init__(self, port: int, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", port))
        self.sockets: list[socket.socket] = []
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        """Shut every socket down before closing it: a bare ``close()`` wakes neither the thread
        blocked in ``accept``/``recv`` on it nor the server, whose session (and any transaction
        a killed worker left open, with its table locks) would then outlive the test."""
        self.closed.set()
        for sock in (self.listener, *self.sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
