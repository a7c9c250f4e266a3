"""Put the workspace root on sys.path, so the tests import ``raft_kv`` without installing it."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
