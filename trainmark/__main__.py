"""``python -m trainmark`` is the ``trainmark`` command."""
import sys

from trainmark.cli import main

sys.exit(main())
