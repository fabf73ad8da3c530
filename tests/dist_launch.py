"""``torchrun ... tests/dist_launch.py run tiny-test ...``: the CLI, with the tiny reference importable."""
import sys

import tiny_reference  # noqa: F401  (tests/rules/1.2/tiny-test.yaml names tiny_reference:TinyTest)

from trainmark.cli import main

sys.exit(main())
