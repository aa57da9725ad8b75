"""Fixtures for backend tests: the fault-injecting chat server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
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
