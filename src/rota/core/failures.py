"""A failure's message as an attempt records it, whatever the exception's class does.

The exception is the handler's, and so is its ``__str__``: one that raises must not take the
failure with it (the attempt's record would fail to be made, the job stay ``running`` until its
lease expired, and the error be lost).  Such a message is a placeholder naming the exception's
type and what its ``__str__`` raised.  Tracebacks need no such care: ``traceback`` formats an
exception whose ``__str__`` raises with a placeholder of its own.
"""

from __future__ import annotations


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
