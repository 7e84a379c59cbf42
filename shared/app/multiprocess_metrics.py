"""prometheus-client's multiprocess mode, for the Celery worker whose pool processes do the counting.

``mnemo worker`` enters :func:`multiprocess_metrics` before anything imports ``prometheus_client`` (the
library reads ``PROMETHEUS_MULTIPROC_DIR`` when it is imported): every process of the worker, the main one
and each pool process, forked or not, then writes its samples to files of its own in a fresh directory,
and :func:`multiprocess_registry` reads them all, summed, for the main process's ``/metrics``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


@contextmanager
def multiprocess_metrics() -> Iterator[Path]:
    """A fresh directory for this worker's metric files, for as long as the block runs (then removed)."""
    if "prometheus_client" in sys.modules:
        raise RuntimeError("prometheus_client was imported before the worker chose multiprocess mode")
    directory = Path(tempfile.mkdtemp(prefix="mnemo-worker-metrics-"))
    os.environ[MULTIPROCESS_VARIABLE] = str(directory)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def multiprocess_registry() -> CollectorRegistry:
    """A registry that reads every process's files: what the worker's ``/metrics`` serves."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated
    return registry
