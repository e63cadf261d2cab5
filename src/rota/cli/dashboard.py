"""``rota dashboard``: serve the web dashboard of an application's ``Rota`` with uvicorn.

The dashboard can retry and cancel jobs, so it refuses to listen beyond this machine
without a token: an open port on a network interface must never be an open admin panel.
"""

from __future__ import annotations

import ipaddress

import click

from rota.cli.loading import load_app


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine: localhost, 127.0.0.0/8 or ::1."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@click.command()
@click.argument("app")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8678, show_default=True, help="TCP port."
)
@click.option(
    "--token",
    envvar="ROTA_DASHBOARD_TOKEN",
    default=None,
    help="Require this token (Bearer header or login form); also $ROTA_DASHBOARD_TOKEN.",
)
def dashboard(app: str, host: str, port: int, token: str | None) -> None:
    """Serve the web dashboard of the Rota at APP (MODULE:ATTR or PATH.py:ATTR).

    Without a token it listens on this machine only.
    """
    if not token and not is_loopback(host):
        raise click.UsageError(
            f"refusing to serve the dashboard on {host!r} without a token: anyone who can reach "
            "it could retry and cancel jobs. Pass --token (or set ROTA_DASHBOARD_TOKEN), or "
            "bind to 127.0.0.1."
        )
    try:
        import uvicorn

        from rota.dashboard import create_app
    except ImportError as error:
        raise click.ClickException(
            f"the dashboard needs {error.name}: install it with pip install 'rota[dashboard]'"
        ) from error
    rota = load_app(app)
    click.echo(f"rota dashboard on http://{host}:{port}/" + (" (token required)" if token else ""))
    uvicorn.run(create_app(rota, token=token), host=host, port=port, log_level="info")
