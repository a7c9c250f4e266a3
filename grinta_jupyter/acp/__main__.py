"""``python -m grinta_jupyter.acp``: the same as ``grinta acp``."""

import sys

from grinta_jupyter.acp import main

sys.exit(main())
