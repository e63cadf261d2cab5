"""Alembic migrations for rota's tables; applied by ``rota migrate`` or on start."""
