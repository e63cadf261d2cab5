"""Sidequest.js jobs, on rota (docs/migrating/sidequest.md)."""
