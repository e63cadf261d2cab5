"""The demo service, under the name the source tree's scripts and docs have always used.

Its code is ``rota.demo`` (src/rota/demo), so that ``rota demo`` works from an installed wheel
too; this package only points there: ``python -m examples.demo`` and ``rota worker
examples.demo.main:app`` run the same service as ``rota demo`` and ``rota worker
rota.demo.main:app``.
"""
