"""The embedded server's thread count and OpenMP wait policy are options."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from orgteams.agents.backends.local import LocalServer, default_threads, local_unavailable


def test_default_threads_every_core_or_the_environment(monkeypatch):
    monkeypatch.delenv("ORGTEAMS_LOCAL_THREADS", raising=False)
    assert default_threads() == (os.cpu_count() or 1)
    monkeypatch.setenv("ORGTEAMS_LOCAL_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("ORGTEAMS_LOCAL_THREADS", "zero")
    with pytest.raises(ValueError, match=re.escape(
            "ORGTEAMS_LOCAL_THREADS must be a positive integer, got 'zero'")):
        default_threads()


def test_bad_settings_fail_before_a_server_starts(monkeypatch):
    with pytest.raises(ValueError, match=re.escape(
            "OpenMP wait policy must be one of passive, active, got 'spin' "
            "(ORGTEAMS_LOCAL_OMP_WAIT or omp_wait_policy)")):
        LocalServer(omp_wait_policy="spin")
    with pytest.raises(ValueError, match=re.escape("n_threads must be >= 1, got 0")):
        LocalServer(n_threads=0)
    monkeypatch.setenv("ORGTEAMS_LOCAL_OMP_WAIT", "busy")
    with pytest.raises(ValueError, match="got 'busy'"):
        LocalServer()


@pytest.mark.local_llm
@pytest.mark.skipif(local_unavailable() is not None, reason=str(local_unavailable()))
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_server_runs_with_the_chosen_threads_and_policy():
    with LocalServer(n_threads=1, omp_wait_policy="active") as server:
        pid = server.process.pid
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"OMP_WAIT_POLICY=ACTIVE" in environ
        params = json.loads(cmdline[3])  # python -c SOURCE PARAMS
        assert params["cpuparams.n_threads"] == params["cpuparams_batch.n_threads"] == 1
        assert params["cpuparams.poll"] == 50  # active: llama.cpp's own pool spins too
        assert "threads=1, omp_wait=active" in repr(server)
        assert server.metrics()["requests_processing"] == 0  # it serves
