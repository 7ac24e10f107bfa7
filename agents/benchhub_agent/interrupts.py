"""Ctrl-C: the agent stops, undoes what it made and says one line ("interrupted", exit 130).

Python raises KeyboardInterrupt wherever the main thread is when the signal is handled.
In an object's finalizer (pymysql's unbuffered result, a driver's connection) that
exception cannot propagate: Python prints "Exception ignored" and goes on, so the run
carried on to its end as if Ctrl-C had never been pressed. The agent's own handler
raises it only outside a finalizer and otherwise sends the signal again a moment later,
when the finalizer has returned.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

RETRY_SECONDS = 0.05


def catch_ctrl_c() -> None:
    """In the agent's main process, in place of Python's default SIGINT handler."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)


def _interrupt(number: int, frame: FrameType | None) -> None:
    if frame is not None and frame.f_code.co_name == "__del__":
        timer = threading.Timer(RETRY_SECONDS, os.kill, (os.getpid(), number))
        timer.daemon = True
        timer.start()
        return
    raise KeyboardInterrupt


def cut_by_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a Ctrl-C unwound the run. A driver's clean-up on
    the way out (pymysql's unbuffered cursor reading the rest of the result the interrupt
    cut mid-packet: "Packet sequence number wrong") can fail on the connection the
    interrupt left half-read, and its error then takes the KeyboardInterrupt's place."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__context__
    return False


def quiet_after_interrupt() -> None:
    """Ctrl-C ends the agent with one line. A database driver's object that the interrupt
    cut mid-call (pymysql's unbuffered result, firebird-driver's connection) may complain
    from its destructor as the process unwinds: noise about a call the user stopped, so it
    is not printed."""
    sys.unraisablehook = lambda _unraisable: None
