"""A failure's message and traceback as an attempt records them, whatever the exception's class
does.

The exception is the handler's, and so is its ``__str__``: one that raises must not take the
failure with it (the attempt's record would fail to be made, the job stay ``running`` until its
lease expired, and the error be lost).  Such a message is a placeholder naming the exception's
type and what its ``__str__`` raised.  Tracebacks need no such care: ``traceback`` formats an
exception whose ``__str__`` raises with a placeholder of its own.
"""

from __future__ import annotations

import traceback
from pathlib import Path

ROTA = str(Path(__file__).resolve().parent.parent)
"""The package's directory: frames of files under it are rota's own."""


def message_of(error: BaseException) -> str:
    """``str(error)``, its ``repr`` when that is empty, or a placeholder when either raises:
    ``<unprintable ValueError: __str__ raised RuntimeError('...')>``."""
    try:
        return str(error) or repr(error)
    except Exception as broken:
        return f"<unprintable {type(error).__name__}: __str__ raised {_shown(broken)}>"


def _shown(broken: Exception) -> str:
    """``repr(broken)``, or its type's name should that raise too."""
    try:
        return repr(broken)
    except Exception:
        return type(broken).__name__


def traceback_of(error: BaseException) -> str:
    """``error`` formatted with its chain, from its first frame that is not rota's: the frames
    that called the handler (the worker's thread, the executor, the task's call) are the same
    for every failure and say nothing of this one.  An error with no other frame (rota's own)
    keeps them all."""
    frames = first = error.__traceback__
    while first is not None and first.tb_frame.f_code.co_filename.startswith(ROTA + "/"):
        first = first.tb_next
    return "".join(traceback.format_exception(type(error), error, first or frames))
