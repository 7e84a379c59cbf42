"""The load bench's CPU figures count a process's children that exited within a stage (a PostgreSQL backend, a
pool process): counting only the living made PostgreSQL's share of a stage negative."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.load import tree_cpu_seconds

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"


def test_a_child_that_burned_cpu_and_exited_still_counts_for_its_parent():
    before = tree_cpu_seconds(os.getpid())
    subprocess.run([sys.executable, "-c", BURN], check=True)  # reaped by this process when it ends
    assert tree_cpu_seconds(os.getpid()) - before >= 0.25
