"""``manage.py rota <command> [arguments]``: the ``rota`` command on the project's Rota.

Every command of ``rota``, with its own options and help: the arguments go to rota's click CLI
as they are, the project's Rota given to it as its ``Host``, so ``worker`` and
``dashboard`` need no APP and the others no ``--url`` or ``--table-prefix``. Output, errors and
exit codes are ``rota``'s (1: an operational failure, 2: a usage error), ``call_command``'s
``stdout``/``stderr`` honoured.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

import click
from django.core.management.base import BaseCommand, CommandParser

from rota.cli import main
from rota.cli.loading import Host
from rota.contrib.django.project import get_rota

DJANGO_GLOBAL_OPTIONS = ("--settings", "--pythonpath")
"""Taken by ``manage.py`` wherever they stand; passed on, they would be unknown to rota."""
CALLED_CHILD = (sys.executable, "-m", "django", "rota")
"""A child worker's command when this one was not started from a command line
(``call_command``): Django's own, with the settings in ``$DJANGO_SETTINGS_MODULE``."""


class Command(BaseCommand):
    help = (
        f"Run a rota command on the project's Rota: manage.py rota {', '.join(main.commands)} "
        "(manage.py rota COMMAND --help for its options)."
    )
    requires_system_checks: list[str] = []
    child: tuple[str, ...] = CALLED_CHILD
    prog = "manage.py rota"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "args",
            nargs=argparse.REMAINDER,
            metavar="COMMAND [ARGUMENTS]",
            help="A rota command and its arguments.",
        )

    def run_from_argv(self, argv: list[str]) -> None:
        """From a command line, children of ``worker --processes`` run the same one."""
        self.child = (sys.executable, argv[0], argv[1])
        self.prog = f"{os.path.basename(argv[0])} {argv[1]}"
        super().run_from_argv(argv)

    def handle(self, *args: str, **options: Any) -> None:
        host = Host(get_rota, self.child)
        with (
            contextlib.redirect_stdout(options.get("stdout") or sys.stdout),
            contextlib.redirect_stderr(options.get("stderr") or sys.stderr),
        ):
            run(rota_arguments(args), host, self.prog)


def rota_arguments(args: tuple[str, ...]) -> list[str]:
    """``args`` without the options ``manage.py`` has already acted on."""
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in DJANGO_GLOBAL_OPTIONS:
            skip = True
        elif not arg.startswith(tuple(f"{option}=" for option in DJANGO_GLOBAL_OPTIONS)):
            kept.append(arg)
    return kept


def run(arguments: list[str], host: Host, prog: str) -> None:
    """Run rota's CLI as ``rota`` runs, but return when it succeeds instead of exiting."""
    try:
        code = main.main(arguments, prog_name=prog, standalone_mode=False, obj=host)
    except click.ClickException as error:
        error.show()
        raise SystemExit(error.exit_code) from None
    except click.Abort:
        click.echo("Aborted!", err=True)
        raise SystemExit(1) from None
    if isinstance(code, int) and code != 0:
        raise SystemExit(code)
