"""Fixtures for backend tests: the fault-injecting chat server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fault_server import FaultServer  # noqa: E402  (needs the path above)


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    """A fault server in mode "ok"; tests switch ``.mode`` as needed."""
    with FaultServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _no_backend_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests must not pick up a developer's real endpoint or key.
    for name in (
        "ORGTEAMS_BASE_URL",
        "OPENAI_BASE_URL",
        "ORGTEAMS_API_KEY",
        "OPENAI_API_KEY",
        "ORGTEAMS_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
