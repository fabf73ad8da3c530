"""``torchrun ... tests/scale_launch.py ...``: the scale worker with the tiny reference registered.

``SCALE_TEST_DIE_RANK=r`` makes rank r exit with status 3 at once (a rank that dies).
"""
import os
import sys

if os.environ.get("SCALE_TEST_DIE_RANK") == os.environ.get("RANK"):
    os._exit(3)

import tiny_reference  # noqa: E402,F401  (registers tiny-test)

from trainmark.harness.scale.worker import main  # noqa: E402

sys.exit(main())
