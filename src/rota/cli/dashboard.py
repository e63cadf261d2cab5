"""``rota dashboard``: serve the web dashboard of an application's ``Rota`` with uvicorn.

The dashboard can retry and cancel jobs, so it refuses to listen beyond this machine
without a token: an open port on a network interface must never be an open admin panel.

Tokens come from a file (``--token-file``) or the environment (``$ROTA_DASHBOARD_TOKEN``):
a command line is visible to every user of the machine in ``ps``, so ``--token`` still works
but warns.  The metrics token, for Prometheus, comes the same ways (``--metrics-token-file``,
``$ROTA_METRICS_TOKEN``).  Tokens of the JSON API at ``/api`` beside the dashboard's own come
from ``$ROTA_API_TOKENS_READ`` and ``$ROTA_API_TOKENS_OPERATE`` (lists separated by commas or
spaces).  The host names it answers to beyond loopback ones come from
``--allowed-host`` or ``$ROTA_DASHBOARD_ALLOWED_HOSTS`` (``rota.dashboard.hosts``).
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import click

from rota.cli.loading import AppCommand, load_app
from rota.environment import (
    API_TOKENS_OPERATE,
    API_TOKENS_READ,
    DASHBOARD_ALLOWED_HOSTS,
    DASHBOARD_TOKEN,
    METRICS_TOKEN,
)
from rota.errors import ConfigError


def stop_with_status_zero(signum: int, frame: object) -> None:
    """uvicorn shuts down on SIGTERM or SIGINT, then sends the signal again to the handler it
    found: this one, so that a stop asked for ends with status 0, as ``rota worker``'s does,
    instead of a death by signal that a supervisor or a script would count as a failure."""
    raise SystemExit(0)


SECRET_FILE = click.Path(exists=True, dir_okay=False, readable=True, path_type=Path)


def read_secret(path: Path | None, env: str) -> tuple[str, str] | None:
    """The token in ``path`` (surrounding whitespace, such as its newline, removed) or else
    in ``$env``, with where it came from for error messages; ``None`` if neither has one."""
    if path is not None:
        try:
            return path.read_text(encoding="utf-8").strip(), str(path)
        except (OSError, UnicodeDecodeError) as error:
            raise click.UsageError(f"cannot read the token in {path}: {error}") from error
    if env in os.environ:
        return os.environ[env], f"${env}"
    return None


def resolve_token(argv: str | None, path: Path | None) -> tuple[str, str] | None:
    """The dashboard token from ``--token``, ``--token-file`` or the environment."""
    if argv is not None and path is not None:
        raise click.UsageError("pass --token or --token-file, not both")
    if argv is None:
        return read_secret(path, DASHBOARD_TOKEN)
    click.echo(
        "warning: --token is visible to every user of this machine (ps, /proc); "
        f"use --token-file or ${DASHBOARD_TOKEN} instead",
        err=True,
    )
    return argv, "--token"


@click.command(cls=AppCommand, hosted_help="Serve the web dashboard of the project's Rota.")
@click.argument("app", required=False)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8678, show_default=True, help="TCP port."
)
@click.option(
    "--token-file",
    type=SECRET_FILE,
    default=None,
    help=(
        f"Require the token in this file (Bearer header or login form); or set ${DASHBOARD_TOKEN}."
    ),
)
@click.option(
    "--token",
    default=None,
    help="The token itself: visible in ps, so prefer --token-file or the environment.",
)
@click.option(
    "--metrics-token-file",
    type=SECRET_FILE,
    default=None,
    help=f"A second token, in this file, that opens /metrics only; or set ${METRICS_TOKEN}.",
)
@click.option(
    "--allowed-host",
    "allowed_host",
    multiple=True,
    envvar=DASHBOARD_ALLOWED_HOSTS,
    show_envvar=True,
    metavar="NAME",
    help="Also answer to this host name (repeatable; .example.com for a domain and below, "
    "* for any). Without a token only localhost, 127.0.0.1 and [::1] are answered; with one "
    "and no --allowed-host, any name.",
)
def dashboard(
    app: str | None,
    host: str,
    port: int,
    token_file: Path | None,
    token: str | None,
    metrics_token_file: Path | None,
    allowed_host: tuple[str, ...],
) -> None:
    """Serve the web dashboard of the Rota at APP (MODULE:ATTR or PATH.py:ATTR; required
    unless an application runs this command with its own Rota, as ``manage.py rota``).

    Without a token it listens on this machine only, and answers only requests whose Host is
    localhost, 127.0.0.1 or [::1] (any other gets 400, against DNS rebinding) or a name given
    with --allowed-host.  A token has at least 16 characters.  The JSON API at /api takes the
    token, and those of $ROTA_API_TOKENS_READ and $ROTA_API_TOKENS_OPERATE, as Bearer tokens.
    A form posted with an Origin other than the dashboard's own (scheme, host and port) gets
    403.
    """
    found = resolve_token(token, token_file)
    metrics = read_secret(metrics_token_file, METRICS_TOKEN)
    try:
        import uvicorn

        from rota.dashboard import create_app
        from rota.dashboard.api import Access, scoped_tokens
        from rota.dashboard.hosts import is_loopback
        from rota.dashboard.security import check_token
    except ImportError as error:
        raise click.ClickException(
            f"the dashboard needs {error.name}: install it with pip install 'rota[dashboard]'"
        ) from error
    if found is None and not is_loopback(host):
        raise click.UsageError(
            f"refusing to serve the dashboard on {host!r} without a token: anyone who can reach "
            f"it could retry and cancel jobs. Pass --token-file (or set {DASHBOARD_TOKEN}), or "
            "bind to 127.0.0.1."
        )
    names = [name for value in allowed_host for name in re.split(r"[\s,]+", value) if name]
    try:
        for secret in (found, metrics):
            if secret is not None:
                check_token(secret[1], secret[0])
        listed = {Access.READ: API_TOKENS_READ, Access.OPERATE: API_TOKENS_OPERATE}
        api_tokens = scoped_tokens({key: os.environ.get(env) for key, env in listed.items()})
        served = create_app(
            load_app(app),
            token=found[0] if found else None,
            metrics_token=metrics[0] if metrics else None,
            allowed_hosts=names or None,
            api_tokens=api_tokens,
        )
    except ConfigError as error:
        raise click.UsageError(str(error)) from error
    click.echo(f"rota dashboard on http://{host}:{port}/" + (" (token required)" if found else ""))
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, stop_with_status_zero)
    uvicorn.run(served, host=host, port=port, log_level="info")
