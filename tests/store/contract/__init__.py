"""The Store and ScheduleStore contract, typed on the protocols and run on every backend.

Each test pins one documented behaviour of a protocol method (its docstring in
``rota.store.base``), reached only through the protocol, so that any store passing this suite
can serve the runtime, the CLI and the dashboard.
"""
