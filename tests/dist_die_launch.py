"""``torchrun ... tests/dist_die_launch.py run tiny-test ...``: like dist_launch.py, but rank
``DIE_RANK`` exits with status 3 at its ``DIE_STEP``-th training step (a rank that dies mid-trial)."""
import itertools
import os
import sys

import tiny_reference

from trainmark.cli import main

if os.environ.get("RANK") == os.environ.get("DIE_RANK"):
    _steps = itertools.count(1)
    _die_at = int(os.environ.get("DIE_STEP", "3"))

    def _tick():
        if next(_steps) == _die_at:
            os._exit(3)
    tiny_reference.TinyTest.tick = staticmethod(_tick)

sys.exit(main())
