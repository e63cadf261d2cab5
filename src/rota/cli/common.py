"""What the inspection and control commands share: database options, errors and output."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource
from rich.console import Console, RenderableType
from rich.table import Table

from rota.app import Rota
from rota.cli import loading
from rota.config import RotaConfig, check_table_prefix, default_url
from rota.core.escaping import visible, visible_json
from rota.core.model import MAX_JOB_ID
from rota.core.names import name_problem
from rota.environment import variable
from rota.errors import (
    ConfigError,
    DatabaseUnavailable,
    InvalidArguments,
    JobNotFound,
    RotaError,
    StoreError,
    TransientStoreError,
    unchained,
)
from rota.store.urls import database_file, describe_url, holds_password, scrub

F = TypeVar("F", bound=Callable[..., Any])
if TYPE_CHECKING:
    IntParamType = click.ParamType[int]
else:  # click is generic only from 8.2 on
    IntParamType = click.ParamType
DEFAULT = ParameterSource.DEFAULT
CONNECT_TIMEOUT = 5.0
ACTOR = "cli"
"""Who the schedules' history says made the changes that go through ``connected``."""
URL_FILE = "rota.url_file"
NAMESPACE = "rota.namespace"
ARGV_WARNING = (
    "rota: warning: --url puts the database password on the command line, where other users "
    "of this machine see it (ps, /proc); set ROTA_DATABASE_URL or use --url-file PATH instead"
)


def database_options(command: F) -> F:
    """``--url``, ``--url-file``, ``--table-prefix`` and ``--namespace``, as ``rota migrate``
    and ``rota prune`` take them; an application that runs the command with its own Rota
    (``loading.Host``) gives their defaults, its Rota's database, table prefix and namespace."""
    command = click.option(
        "--namespace",
        default=None,
        expose_value=False,
        callback=_namespace,
        metavar="NAME",
        help="The service whose jobs, schedules, queues and workers to act on, as "
        "Rota(namespace=...) (default: $ROTA_NAMESPACE, else 'default').",
    )(command)
    command = click.option(
        "--table-prefix",
        default=RotaConfig.table_prefix,
        show_default=True,
        callback=_table_prefix,
        help="Prefix of rota's tables, as Rota(table_prefix=...) (default: $ROTA_TABLE_PREFIX, "
        "else rota_).",
    )(command)
    return url_options("$ROTA_DATABASE_URL, else sqlite:///rota.db", hosted=True)(command)


def url_options(default: str, *, hosted: bool = False) -> Callable[[F], F]:
    """``--url URL`` or ``--url-file PATH``, the command's ``url`` either way (``None``: neither).

    A password on the command line is visible to every user of the machine, so a ``--url`` that
    carries one is answered with a warning on stderr; the file (its first line, ``-`` for
    stdin) and the environment keep it out of sight. The file's bytes are taken as they are:
    a password that is not UTF-8 reaches the driver as the same bytes.
    """

    def decorate(command: F) -> F:
        command = click.option(
            "--url-file",
            type=click.Path(exists=True, dir_okay=False, allow_dash=True),
            expose_value=False,
            is_eager=True,  # read before --url's callback, which returns the URL either way
            callback=_url_file,
            metavar="PATH",
            help="Read the database URL from the first line of this file instead.",
        )(command)
        return click.option(
            "--url",
            default=None,
            metavar="URL",
            callback=_hosted_url if hosted else _url,
            help=f"Database URL (default: {default}); prefer --url-file or the environment "
            "for one with a password.",
        )(command)

    return decorate


def _url_file(context: click.Context, parameter: click.Parameter, path: str | None) -> None:
    if path is None:
        return
    try:
        with click.open_file(path, "rb") as file:  # "-" is stdin, left open
            first = file.readline()
    except OSError as error:
        raise click.BadParameter(f"cannot read {path}: {error.strerror}") from None
    line = first.decode("utf-8", "surrogateescape").lstrip("\ufeff").strip()
    if not line:
        raise click.BadParameter(f"{path} holds no URL on its first line")
    context.meta[URL_FILE] = line


def _url(context: click.Context, parameter: click.Parameter, value: str | None) -> str | None:
    from_file: str | None = context.meta.get(URL_FILE)
    if value is None:
        return from_file
    if from_file is not None:
        raise click.UsageError("give --url or --url-file, not both")
    if holds_password(value):
        click.echo(ARGV_WARNING, err=True)
    return value


def _hosted_url(
    context: click.Context, parameter: click.Parameter, value: str | None
) -> str | None:
    url = _url(context, parameter, value)
    host = loading.hosted()
    return url if url is not None or host is None else host.rota().config.url


def _table_prefix(context: click.Context, parameter: click.Parameter, value: str) -> str:
    """The option, else the hosted application's Rota's prefix, else ``$ROTA_TABLE_PREFIX``
    (as ``Rota()`` reads it), else the default."""
    host = loading.hosted()
    if context.get_parameter_source("table_prefix") is DEFAULT:
        if host is not None:
            return host.rota().config.table_prefix
        value = os.environ.get(variable("table_prefix")) or value
    try:
        return check_table_prefix(value)
    except ConfigError as error:
        raise click.BadParameter(f"{error.code}: {error}") from error


def _namespace(context: click.Context, parameter: click.Parameter, value: str | None) -> None:
    host = loading.hosted()
    if value is None and host is not None:
        value = host.rota().namespace
    if value is not None:
        problem = name_problem("namespace", value)
        if problem is not None:
            raise click.BadParameter(f"{ConfigError.code}: {problem}")
        context.meta[NAMESPACE] = value


class JobId(IntParamType):
    """A job id as typed: digits only; more than ``MAX_JOB_ID`` has is no job, not a crash."""

    name = "ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value)
        if not (text.isascii() and text.isdigit()):
            self.fail(f"a job id is a number, got {text[:40]!r}", param, ctx)
        return job_id(text)


def job_id(digits: str) -> int:
    """The id ``digits`` names; ``JOB_NOT_FOUND`` when it is past any job's (BIGINT) id."""
    significant = digits.lstrip("0") or "0"
    if len(significant) > len(str(MAX_JOB_ID)) or int(significant) > MAX_JOB_ID:
        shown = (
            significant
            if len(significant) <= 20
            else f"{significant[:20]}... ({len(significant)} digits)"
        )
        raise fail(f"{JobNotFound.code}: job {shown} does not exist (ids end at {MAX_JOB_ID})")
    return int(significant)


def json_option(command: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON for scripts (times in ISO 8601)."
    )(command)


def fail(message: str) -> click.ClickException:
    """An operational failure: the message goes to stderr and the exit code is 1."""
    return click.ClickException(message)


def build_rota(url: str, table_prefix: str, **settings: Any) -> Rota:
    """A ``Rota`` that reads and controls; it never changes the schema (``rota migrate`` does).
    ``settings`` are more of ``Rota``'s (``rota prune``'s retention); the namespace is the
    command's ``--namespace``, if it has one and it was given."""
    context = click.get_current_context(silent=True)
    if context is not None and NAMESPACE in context.meta:
        settings.setdefault("namespace", context.meta[NAMESPACE])
    try:
        return Rota(
            url,
            table_prefix=table_prefix,
            auto_migrate=False,
            connect_timeout=CONNECT_TIMEOUT,
            **settings,
        )
    except ConfigError as error:
        raise click.UsageError(f"{error.code}: {scrub(str(error), url)}") from error


@contextlib.contextmanager
def reporting(url: str) -> Iterator[None]:
    """Turn rota's typed errors into ``CODE: message`` on stderr and exit code 1."""
    try:
        yield
    except RotaError as error:
        raise fail(f"{error.code}: {scrub(str(error), url)}") from error
    except UnicodeEncodeError as error:
        # Bytes that are not UTF-8 on the command line reach Python as lone surrogates, which
        # no database driver can send.
        bad = error.object[error.start : error.end]
        message = f"an argument is not valid UTF-8 text (it holds {bad!r})"
        if scrub(message, url) != message:  # the URL's own characters: say nothing of them
            unchained(fail(f"{InvalidArguments.code}: the database URL is not valid UTF-8"))
        raise fail(f"{InvalidArguments.code}: {message}") from error


@contextlib.contextmanager
def reaching(rota: Rota) -> Iterator[None]:
    """Around a first call to the database: one that cannot be reached (a transient error, as
    the worker's wait for it takes it) is ``DatabaseUnavailable``, and so is a SQLite file that
    does not exist (connecting would create it); one that answers with a refusal (a wrong
    password, an unknown user or database) is a ``StoreError`` saying so, the server's own
    words kept, as the worker reports it: retrying would not help."""
    where = describe_url(rota.config.url)
    path = database_file(rota.config.url)
    if path is not None and not os.path.exists(path):
        raise DatabaseUnavailable(f"no SQLite database file at {path!r}")
    try:
        yield
    except (TransientStoreError, DatabaseUnavailable) as error:
        unchained(DatabaseUnavailable(f"cannot reach the {where}: {error}"))
    except StoreError as error:
        refusal = "cannot open" if path is not None else "the server refused the connection to"
        unchained(StoreError(f"{refusal} the {where}: {error}"))


@contextlib.contextmanager
def connected(url: str | None, table_prefix: str, **settings: Any) -> Iterator[Rota]:
    """A ``Rota`` on a reachable database whose schema is current; its connections closed after.

    Every command that changes a schedule reaches it through here, so this is where the changes
    are recorded as the CLI's (actor ``cli``) rather than each command naming itself."""
    target = url or default_url()
    rota = build_rota(target, table_prefix, **settings)
    try:
        with reporting(target):
            with reaching(rota):
                rota.inspect.connect()
            problem = rota.inspect.schema().problem
            if problem is not None:
                raise fail(problem)
            with rota.acting_as(ACTOR):
                yield rota
    finally:
        rota.close()


# -- output ------------------------------------------------------------------------------------


def render(*items: RenderableType) -> None:
    """Print aligned output: colour on a terminal only, no wrapping nor trailing blanks when
    piped."""
    stream = sys.stdout
    terminal = stream.isatty()
    out = Console(
        file=stream,
        markup=False,
        emoji=False,
        highlight=False,
        width=None if terminal else 1000,
    )
    with out.capture() as captured:
        for item in items:
            out.print(item)
    click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


def pairs(rows: list[tuple[str, str]]) -> Table:
    """Two aligned columns, a label and its value."""
    grid = Table(box=None, show_header=False, pad_edge=False)
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    for label, value in rows:
        grid.add_row(label, visible(value))
    return grid


def emit_json(data: Any) -> None:
    """``data`` as JSON whose strings show every invisible or control character as an escape."""
    click.echo(visible_json(json.dumps(data, indent=2, ensure_ascii=False, default=_json_value)))


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Enum):
        return value.value
    return str(value)
