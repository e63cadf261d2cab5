"""Helpers for testing code that uses rota: a fake clock; ``Rota.drain()`` runs due jobs."""

from __future__ import annotations

from rota.core.clock import Clock, FakeClock, SystemClock

__all__ = ["Clock", "FakeClock", "SystemClock"]
