"""The OpenAI SDK, loaded on first use.

Importing ``openai`` takes most of a second of CPU. A process that never calls a model (the offline
companion, beat, the panel's API, a worker with no LLM configured) should not pay it at every start, so
the modules that speak to a model import it from here: the module object is real, and its code runs the
first time one of its names is used. Type checkers see the real module (``openai`` ships its types).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, TypedDict


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


if TYPE_CHECKING:
    import openai as openai  # re-exported: the modules that speak to a model import it from here
else:
    openai = lazy_module("openai")


class ClientOptions(TypedDict):
    """What an SDK client of one endpoint is made with: ``openai.AsyncOpenAI(**options)``."""

    base_url: str
    api_key: str
    timeout: float
    max_retries: int


def deadline_passed(client: openai.AsyncOpenAI, path: str) -> openai.APITimeoutError:
    """The SDK's own timeout error for a deadline this code keeps (a whole request's), so that callers treat it as
    they treat the SDK's: ``path`` is the request's, under the client's base URL."""
    import httpx

    request = httpx.Request("POST", f"{client.base_url}{path}")
    # openai 3 types ``request`` as its own httpx fork's (httpx2); the error only keeps it, for its method and URL.
    return openai.APITimeoutError(request=request)  # type: ignore[arg-type]
