"""The test project's one app: a model for the ORM queries, a ``tasks.py`` to discover."""
