#!/usr/bin/env python
"""The trial project's manage.py (``tests/django/test_testing.py`` runs it in a copy)."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trial_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
