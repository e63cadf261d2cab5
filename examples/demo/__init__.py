"""A small service built on rota, laid out as a real one would be.

``config`` reads the settings and builds the one ``Rota`` instance, ``tasks`` registers the
handlers on it, and ``main`` is the entry point (``python -m examples.demo``).  A fleet would
run the same code with ``rota worker examples.demo.main:app`` on every host.
"""
