"""Pure decisions: no I/O, no asyncio, no SQLAlchemy; what needs the time is given it."""
