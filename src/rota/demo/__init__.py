"""A small service built on rota, laid out as a real one would be, shipped in the package so
that ``rota demo`` works wherever rota is installed.

``config`` reads the settings and builds the one ``Rota`` instance, ``tasks`` registers the
handlers on it, and ``main`` is the entry point (``rota demo`` or ``python -m rota.demo``).  A
fleet would run the same code with ``rota worker rota.demo.main:app`` on every host.
"""
