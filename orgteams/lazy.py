"""Lazy re-exports for package ``__init__`` files (PEP 562), so short imports stay cheap.

``from orgteams.envs.render import EpisodeVideo`` should not cost every
``import orgteams.envs`` the renderer's modules: a package lists the names it re-exports
and the module each lives in, and the module is imported on first use. A leaf module:
it imports nothing of ours.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` that import ``exports`` on first use.

    Args:
        package: The package's ``__name__``.
        exports: Name -> the module (absolute) that defines it.

    Example (in a package's ``__init__``)::

        __getattr__, __dir__ = lazy_exports(__name__, {"play": "orgteams.envs.play.keyboard"})
    """
    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # Looked up each time, not cached here: a name replaced in its module (a test's
        # monkeypatch) is the one the package gives.
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
