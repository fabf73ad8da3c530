"""``torchrun ... tests/dist_launch.py run tiny-test ...``: the CLI with the tiny reference registered."""
import sys

import tiny_reference  # noqa: F401  (registers tiny-test)

from trainmark.cli import main

sys.exit(main())
