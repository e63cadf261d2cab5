"""A web dashboard for rota: ``create_app(rota, token=...)`` returns an ASGI app to mount.

It needs the ``dashboard`` extra (``pip install 'rota[dashboard]'``): Starlette, Jinja2,
itsdangerous (login sessions), prometheus_client (``/metrics``) and, for ``rota dashboard``,
uvicorn.
"""

from rota.dashboard.app import create_app

__all__ = ["create_app"]
