"""Mnemo's tests.

Python writes the bytecode it compiles, in the test runner and in every process a test starts (``mnemo
chat``, a worker, beat, the API: dozens in a run), even where the environment says not to
(``PYTHONDONTWRITEBYTECODE``, as some containers set it): otherwise each of them compiles Mnemo's own
modules again, about 0.7 s of CPU a start. pytest imports this package before any conftest or test
module, so its rewritten test modules are kept the same way.
"""

import os
import sys

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
