"""The example Django project served by uvicorn, in headless Chromium: a staff user opens the
dashboard, is sent to the admin's login and back, follows the admin's link to it, places an
order with the shop's form and pauses its confirmation job with the dashboard's.

The project runs as it would be deployed: ``migrate``, ``rota migrate`` and a superuser on a
SQLite file, then ``uvicorn shop_project.asgi:application``, each in a process of its own (this
session may have set up another Django project). Chromium as
``tests.browser`` drives it: skipped without it, unless ``CI=true``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.browser import chromium_page, missing
from tests.examples.test_django_shop import EXAMPLE
from tests.requirements import skipped_outside_ci

PASSWORD = "a password for the browser test"
SET_UP = f"""
from django.contrib.auth.models import User
from django.core.management import call_command

from orders.models import Product

call_command("migrate", verbosity=0)
call_command("rota", "migrate")
User.objects.create_superuser("boss", password={PASSWORD!r})
Product.objects.create(name="kettle", stock=3)
"""
"""What a deployment does first (migrate, rota migrate, createsuperuser) and a product, in one
process."""
pytestmark = [pytest.mark.slow, skipped_outside_ci(missing())]


def project_env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "SHOP_DATABASE_URL": f"sqlite:///{tmp_path}/shop.sqlite3"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


def manage(env: dict[str, str], *args: str) -> None:
    command = [sys.executable, "manage.py", *args]
    done = subprocess.run(command, cwd=EXAMPLE, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@contextmanager
def uvicorn(env: dict[str, str]) -> Iterator[str]:
    """The project's ASGI application served by uvicorn on a free port; its base URL once the
    admin's login page answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", "shop_project.asgi:application"]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--log-level", "warning"],
        cwd=EXAMPLE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:  # waiting for a process to listen, not for time to pass
            try:
                with urllib.request.urlopen(f"{base}/admin/login/", timeout=1):
                    break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    server.kill()
                    pytest.fail(f"uvicorn did not serve the shop: {server.communicate()[0]}")
                time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        try:
            output = server.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:  # a request still hanging: say so, after the kill
            server.kill()
            output = f"uvicorn did not stop: {server.communicate()[0]}\nTraceback"
    assert "Traceback" not in output, output  # lifespan included: Django refuses it alone


def test_a_staff_user_reaches_the_dashboard_through_the_admin(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    manage(env, "shell", "-c", SET_UP)
    with uvicorn(env) as base, chromium_page() as page:
        from playwright.sync_api import expect

        page.goto(f"{base}/rota/jobs")
        page.wait_for_url(f"{base}/admin/login/?next=/rota/jobs")
        page.fill("#id_username", "boss")
        page.fill("#id_password", PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{base}/rota/jobs")
        assert page.title().endswith("· rota")

        page.goto(f"{base}/admin/")
        page.get_by_role("link", name="Background jobs and schedules").click()
        page.wait_for_url(f"{base}/rota/")
        assert page.title() == "Overview · rota"

        page.goto(f"{base}/orders/")
        page.get_by_role("button", name="Order").click()
        page.wait_for_url(f"{base}/orders/")
        job = json.loads(page.locator("body").inner_text())["job"]
        page.goto(f"{base}/rota/jobs/{job}")
        state = page.locator("h1 .state")
        expect(state).to_have_text("pending")
        page.get_by_role("button", name="Pause").click()
        expect(state).to_have_text("paused")
        assert page.url == f"{base}/rota/jobs/{job}"
