"""The agent's optional compiled modules (agents/setup.py builds them where a compiler
and Python's headers are found): a test of one skips, saying why, where it was not built."""

from __future__ import annotations

import os
import shutil
import sysconfig
from collections.abc import Callable
from typing import Any

import pytest

NOT_BUILT = "no C compiler or Python headers when the agent was installed (agents/setup.py)"


def can_build() -> bool:
    """Whether setup.py could build a module here: what setuptools runs, and Python.h."""
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return os.name == "posix" and bool(shutil.which(compiler)) and os.path.exists(headers)


def built(getter: Callable[[], Any]) -> Any:
    """``getter()``'s module, or the test skipped where it was not built."""
    module = getter()
    if module is None:
        pytest.skip(f"the compiled loop is not built here: {NOT_BUILT}")
    return module
