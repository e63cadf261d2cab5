"""The worked examples of the migration guides (docs/migrating/): one package per guide, each a
``tasks`` module with its ``Rota``, included in its page and run by
tests/docs/test_migration_guides.py."""
