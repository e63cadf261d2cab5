"""The shop's ASGI application: Django, with rota's dashboard under ``ROTA["DASHBOARD"]``'s path.

Serve it with ``uvicorn shop_project.asgi:application``; the admin links to the dashboard.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from rota.contrib.django.dashboard import with_dashboard

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop_project.settings")
application = with_dashboard(get_asgi_application())
