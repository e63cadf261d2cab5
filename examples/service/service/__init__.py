"""An internal scheduling service on rota: three cron tasks (sync, report, cleanup) and one
on-demand task (alerts), run by two replicas under systemd (README.md).

The modules depend on each other in one direction only: ``settings`` ← ``rota_app`` (the one
``Rota``) ← ``tasks.*`` (which register themselves on it) ← ``app`` (the entry point, which
imports them all) ← ``__main__``.  No task module imports the entry point, so importing
``service.tasks`` alone (a test, a shell) works, and ``rota worker service.app:rota`` finds
every task registered.
"""
