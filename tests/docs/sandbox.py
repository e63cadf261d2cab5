"""Where a documentation page runs: a fresh directory, the environment the pages promise, and the
commands of its ``sh`` blocks.

A page is read top to bottom as a reader would type it, so its blocks share one directory (the
cwd), one SQLite database (``$ROTA_DATABASE_URL``) and one ``PATH`` on which ``rota`` is this
venv's script. Python blocks run in this process, so everything a page changes here (cwd,
environment, ``sys.path``, the modules it imported from its directory) is undone when it ends:
the next page, and the rest of the suite in the same process, start as they would have.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import signal
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy.engine import make_url

from tests.conftest import SERVERS
from tests.requirements import require

# The venv of the running interpreter, whichever it is (.venv, .venv-3.10, ...).
SCRIPTS = Path(sysconfig.get_path("scripts"))
OUTER_VARIABLES = ("ROTA_", "DJANGO_SETTINGS_MODULE", "PYTEST_")
COMMAND_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Finished:
    """What a foreground command did: its exit code (None if it outlived its timeout)."""

    code: int | None
    stdout: str
    stderr: str


@dataclass
class Background:
    """A command a page left running; ``where`` is the page and line that started it."""

    where: str
    command: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def ended_early(self) -> str:
        return (
            f"the background command `{self.command}` exited {self.process.returncode} "
            f"before the page ended:\n{self.output()}"
        )


class Sandbox:
    """The page's directory and environment while it runs, restored by ``__exit__``."""

    def __init__(self, directory: Path, logs: Path) -> None:
        self.directory = directory
        self.logs = logs
        self.background: list[Background] = []
        self._cleanups: list[Callable[[], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._mariadb: Any = None

    def __enter__(self) -> Sandbox:
        self.directory.mkdir(parents=True)
        self.logs.mkdir(parents=True)
        self._cwd = Path.cwd()
        self.outer_environ = dict(os.environ)
        self._path = list(sys.path)
        self._modules = set(sys.modules)
        os.chdir(self.directory)
        # A variable of the developer's shell (ROTA_NAMESPACE, ...) or of the suite around the
        # page (a Django settings module, pytest's own) must not change a page.
        for name in [name for name in os.environ if name.startswith(OUTER_VARIABLES)]:
            del os.environ[name]
        os.environ["ROTA_DATABASE_URL"] = f"sqlite:///{self.directory}/rota.db"
        os.environ["PATH"] = os.pathsep.join([str(SCRIPTS), self.outer_environ.get("PATH", "")])
        os.environ["PYTHONPATH"] = str(self.directory)
        sys.path.insert(0, str(self.directory))
        importlib.invalidate_caches()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            for background in self.background:
                if background.process.poll() is None:
                    _signal(background.process, signal.SIGKILL)
                    background.process.wait()
            while self._cleanups:
                self._cleanups.pop()()
            if self._loop is not None:
                self._loop.close()
        finally:
            self._restore()

    def _restore(self) -> None:
        os.chdir(self._cwd)
        os.environ.clear()
        os.environ.update(self.outer_environ)
        sys.path[:] = self._path
        for name in set(sys.modules) - self._modules:
            if self.owns(sys.modules[name]):
                del sys.modules[name]
        for entry in list(sys.path_importer_cache):
            if entry.startswith(str(self.directory)):
                del sys.path_importer_cache[entry]
        importlib.invalidate_caches()

    def owns(self, module: object) -> bool:
        """Whether a module was loaded from the page's directory (or is the page's own)."""
        places = [getattr(module, "__file__", None), *getattr(module, "__path__", ())]
        inside = [str(place).startswith(str(self.directory)) for place in places if place]
        return any(inside) or getattr(module, "__name__", "") == PAGE_MODULE

    def at_exit(self, cleanup: Callable[[], None]) -> None:
        """Call ``cleanup`` when the page ends, before the environment is restored."""
        self._cleanups.append(cleanup)

    def mariadb(self) -> Any:
        """A connection to a database of the page's own on the test MariaDB
        (``ROTA_TEST_MYSQL_URL``), made at the first call and dropped when the page ends. An
        unreachable server skips the page, as it does the suite's other tests, or fails it in CI."""
        if self._mariadb is not None:
            return self._mariadb
        pymysql = importlib.import_module("pymysql")
        variable, default = SERVERS["mariadb"]
        url = make_url(self.outer_environ.get(variable, default))
        try:
            connection = pymysql.connect(
                host=url.host or "127.0.0.1",
                port=url.port or 3306,
                user=url.username or "root",
                password=url.password or "",
                autocommit=True,
                client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS,
            )
        except pymysql.MySQLError as error:
            require(f"MariaDB is not reachable at {url.host}:{url.port or 3306}: {error}")
            raise
        name = f"docs_{uuid.uuid4().hex[:12]}"
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {name}")
        connection.select_db(name)

        def drop() -> None:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP DATABASE {name}")
            connection.close()

        self.at_exit(drop)
        self._mariadb = connection
        return connection

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """One event loop per page, for its top-level ``await``\\ s: what one block starts on it
        (a task, a started ``Rota``) is still there for the next block."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop

    def run(self, command: str, timeout: float = COMMAND_TIMEOUT) -> Finished:
        """Run one command with bash in the page's directory; on timeout its process group is
        killed (a command's children included) and the exit code is None."""
        process = subprocess.Popen(
            ["bash", "-o", "pipefail", "-c", command],
            cwd=self.directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _signal(process, signal.SIGKILL)
            stdout, stderr = process.communicate()
            return Finished(None, stdout.decode(errors="replace"), stderr.decode(errors="replace"))
        return Finished(
            process.returncode, stdout.decode(errors="replace"), stderr.decode(errors="replace")
        )

    def start(
        self, commands: list[tuple[str, str]], timeout: float = COMMAND_TIMEOUT
    ) -> Background | None:
        """Start commands in the background, each ``(command, where)``, and wait until each
        has printed something (a worker logs ``worker.started``), or for ``timeout`` if it
        stays silent: a page must not go on, nor end, while they are still starting. They
        start together, as a reader's terminals would. Returns one that has already ended."""
        started = []
        for command, where in commands:
            log = self.logs / f"background-{len(self.background)}.log"
            with log.open("wb") as sink:
                process = subprocess.Popen(
                    ["bash", "-o", "pipefail", "-c", command],
                    cwd=self.directory,
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            started.append(Background(where, command, process, log))
            self.background.append(started[-1])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(
            job.process.poll() is None and not job.log.stat().st_size for job in started
        ):
            time.sleep(0.02)
        for background in started:
            if background.process.poll() is not None:
                self.background.remove(background)
                return background
        return None

    def stop_background(self, commands: set[str] | None = None) -> list[str]:
        """SIGTERM to every background command still running (or those of ``commands`` only,
        as a reader's Ctrl-C in their terminals); each must then stop within ``STOP_TIMEOUT``
        seconds, as a worker does on a deploy's SIGTERM: with status 0, or killed by that
        SIGTERM (uvicorn shuts down, then raises the signal again, which a supervisor such as
        systemd counts as a clean stop). The problems found."""
        problems = []
        running = []
        stopping = [b for b in self.background if commands is None or b.command in commands]
        for background in stopping:
            self.background.remove(background)
            if background.process.poll() is not None:
                problems.append(f"{background.where}: {background.ended_early()}")
            else:
                _signal(background.process, signal.SIGTERM)
                running.append(background)
        for background in running:
            try:
                code = background.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                _signal(background.process, signal.SIGKILL)
                background.process.wait()
                problems.append(
                    f"{background.where}: `{background.command}` was still running "
                    f"{STOP_TIMEOUT:g} s after SIGTERM:\n{background.output()}"
                )
                continue
            if code not in (0, -signal.SIGTERM):
                problems.append(
                    f"{background.where}: `{background.command}` exited {code} on SIGTERM "
                    f"(0 expected):\n{background.output()}"
                )
        return problems


# The name of the module whose namespace a page's Python blocks share.
PAGE_MODULE = "__docs_page__"


def _signal(process: subprocess.Popen[bytes], number: int) -> None:
    """Signal the command's process group: bash and whatever it started."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, number)
