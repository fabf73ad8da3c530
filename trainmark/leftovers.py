"""Leave nothing behind that the user did not ask for.

Importing ``torch._dynamo`` (which building a reference model does, through
torchvision) creates torch inductor's cache folder, ``$TMPDIR/torchinductor_<user>``, at
import time, even though trainmark never compiles anything: every run left an empty
folder. If that folder did not exist when the command started and is still empty when
it ends, it is removed; a folder that exists or holds anything is never touched.
"""
from __future__ import annotations

import atexit
import getpass
import os
import re
import tempfile


def inductor_cache_dir() -> str:
    """The folder torch would create (torch/_inductor/runtime/cache_dir_utils.py, default_cache_dir)."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return os.path.abspath(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


def remove_empty_inductor_cache_at_exit() -> None:
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):  # the user chose it: theirs
        return
    path = inductor_cache_dir()
    if os.path.lexists(path):
        return

    def remove_if_empty() -> None:
        try:
            os.rmdir(path)  # fails, harmlessly, unless it is an empty folder
        except OSError:
            pass
    atexit.register(remove_if_empty)
