"""A dead model server stops the episode with status error; a flaky one does not."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from orgteams.agents.backends import BackendError, OpenAIBackend, ScriptedBackend
from orgteams.agents.llm_agent import LLMAgent
from orgteams.envs.errors import UserError
from orgteams.envs.highlevel import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.episode_status import EpisodeStopped
from orgteams.organizations.runner import TeamRunner
from orgteams.organizations.team_log import read_log

sys.path.insert(0, str(Path(__file__).parents[1] / "agents"))
from fault_server import FaultServer  # noqa: E402  (needs the path above)


def team(backend, n=3):
    return {f"agent_{i}": LLMAgent(f"agent_{i}", backend, max_retries=0) for i in range(n)}


def runner(backend, tmp_path=None, **kw):
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    return TeamRunner(env, load_organization("none"), team(backend), max_rounds=3,
                      log_path=tmp_path / "ep.jsonl" if tmp_path else None, **kw)


def test_dead_backend_stops_the_episode_with_status_error(tmp_path):
    dead = ScriptedBackend([BackendError("HTTP 500: boom", kind="http", status=500)], cycle=True)
    result = runner(dead, tmp_path).run(seed=0)
    s = result.summary
    assert s["episode_status"] == "error"
    assert s["stop_reason"] == "transport failures"
    assert s["stop_detail"] == ("3 model calls in a row failed after retries "
                                "(last: http: HTTP 500: boom)")
    assert len(dead.calls) == 3  # round 0's communicate stage, then nothing more
    assert s["backend_fallbacks"] == 3
    records = list(read_log(tmp_path / "ep.jsonl"))
    stopped = [r for r in records if r.get("type") == "stopped"]
    assert stopped == [{"record": "event", "round": 0, "tick": 0, "type": "stopped",
                        "status": "error", "reason": "transport failures",
                        "detail": s["stop_detail"]}]
    assert records[-1]["record"] == "summary" and records[-1]["episode_status"] == "error"


def test_flaky_backend_that_answers_in_between_plays_on():
    ok = {"receivers": ["everyone"], "message": "", "thoughts": ""}
    flaky = ScriptedBackend([BackendError("timeout", kind="timeout"), ok, ok], cycle=True)
    result = runner(flaky).run(seed=0)
    assert result.summary["episode_status"] == "complete"
    assert result.summary["stop_reason"] == "max rounds"
    assert result.summary["stop_detail"] is None
    assert result.summary["rounds"] == 3 and result.summary["backend_fallbacks"] > 0


def test_no_limit_plays_every_round():
    dead = ScriptedBackend([BackendError("HTTP 500: boom", kind="http", status=500)], cycle=True)
    result = runner(dead, max_transport_failures=None).run(seed=0)
    assert result.summary["episode_status"] == "complete"
    assert result.summary["rounds"] == 3


@pytest.mark.parametrize("bad", [0, -2, True, 1.5])
def test_bad_limit_is_a_user_error(bad):
    with pytest.raises(UserError, match=re.escape(
            f"max_transport_failures must be a positive number of calls or None, got {bad!r}")):
        runner(ScriptedBackend(), max_transport_failures=bad)


def test_early_stop_status_is_checked():
    with pytest.raises(ValueError, match=re.escape(
            "an early stop is 'error' or 'interrupted', not 'complete'")):
        EpisodeStopped("complete", "done")


def test_server_gone_for_the_whole_run_records_every_request(tmp_path):
    with FaultServer("drop") as server:
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="k",
                                timeout=1.0, max_retries=1, backoff=0.01)
        result = runner(backend, tmp_path, max_transport_failures=2).run(seed=0)
        sent = len(server.requests)
    s = result.summary
    assert s["episode_status"] == "error"
    assert s["stop_detail"].startswith("2 model calls in a row failed after retries (last: "
                                       "connection: connection failed to http://127.0.0.1:")
    # every request the server saw is an attempt in the decision records
    assert s["model_requests"] == s["failed_requests"] == sent == 4
    assert s["failed_requests_by_kind"] == {"connection": 4}
    decisions = [r for r in read_log(tmp_path / "ep.jsonl") if r.get("phase")]
    assert [len(r["attempts"]) for r in decisions] == [2, 2]
    assert {a["error"] for r in decisions for a in r["attempts"]} == {"APIConnectionError"}


def test_cli_run_against_a_dead_server_exits_1_with_the_reason(tmp_path, monkeypatch, capsys):
    import json

    from orgteams.cli import main

    monkeypatch.setenv("ORGTEAMS_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "0")
    log = tmp_path / "ep.jsonl"
    assert main(["run", "--layout", "studio", "--backend", "openai:dead-cli-model",
                 "--max-rounds", "4", "--max-transport-failures", "2", "--log", str(log),
                 "--quiet", "--json"]) == 1
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["episode_status"] == "error" and summary["failed_requests"] == 2
    assert captured.err.strip().splitlines()[-1] == (  # (llama.cpp may log before it)
        "orgteams run: episode stopped (error): 2 model calls in a row failed after retries "
        "(last: connection: connection failed to http://127.0.0.1:9/v1)")
