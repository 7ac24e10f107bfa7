"""The environment on systems other than Linux, one module per platform.

Linux is :mod:`benchhub_agent.sysinfo` itself (/proc, /sys, mountinfo). Each
module here reads its platform's own sources — commands whose output it
parses with pure functions (tested on recorded outputs of real machines, see
``agents/tests/platform_fixtures/README.md``), or the Windows API — and
returns the document's ``hardware``, ``os`` and ``storage`` sections with
the same fields as on Linux. Nothing here names the machine or its user.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Sequence
from types import ModuleType

COMMAND_TIMEOUT_S = 10


def output(command: Sequence[str]) -> str:
    """A command's stdout, or "" when it is missing, fails or hangs."""
    try:
        done = subprocess.run(  # noqa: S603 - fixed system tools, no shell
            list(command), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def for_this_system() -> ModuleType | None:
    """The module describing this platform, or None on Linux (sysinfo does)."""
    system = platform.system()
    if system == "Darwin":
        from . import macos

        return macos
    if system == "Windows":
        from . import windows

        return windows
    return None
