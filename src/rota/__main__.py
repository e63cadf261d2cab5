"""``python -m rota`` is the ``rota`` command."""

from rota.cli import main

main()
