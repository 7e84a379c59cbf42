"""The OpenAI SDK, loaded on first use.

Importing ``openai`` takes most of a second of CPU. A process that never calls a model (the offline
companion, beat, the panel's API, a worker with no LLM configured) should not pay it at every start, so
the modules that speak to a model import it from here: the module object is real, and its code runs the
first time one of its names is used.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """``name`` as a module whose code runs on first attribute access (the loaded module when it already is)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


openai = lazy_module("openai")
