"""``{% rota_dashboard_url %}``: where the project serves rota's dashboard, for the admin's link.

It is ``ROTA["DASHBOARD"]["PATH"]`` under the script prefix (a site served under a prefix of
its own), or ``""`` when the project serves no dashboard, so the admin shows no dead link.
"""

from __future__ import annotations

from django import template
from django.urls import get_script_prefix

from rota.contrib.django.project import project_options

register = template.Library()


@register.simple_tag
def rota_dashboard_url() -> str:
    chosen = project_options().dashboard
    if chosen is None:
        return ""
    return get_script_prefix().rstrip("/") + chosen.path
