"""Importable applications that the process tests run under ``rota worker MODULE:ATTR``."""
