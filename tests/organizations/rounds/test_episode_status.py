"""A dead model server, or a model that never answers validly, stops the episode with
status error (counted call by call); a flaky one does not; every summary says why the
episode ended."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from doubles import read_dicts
from fault_server import FaultServer  # noqa: E402  (needs the path above)

from orgteams.agents.backends import BackendError, OpenAIBackend, ScriptedBackend
from orgteams.agents.backends.scripted import minimal_instance
from orgteams.agents.llm.llm_agent import LLMAgent
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.errors import UserError
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.rounds.status import EpisodeStopped


def team(backend, n=3):
    return {f"agent_{i}": LLMAgent(f"agent_{i}", backend, max_retries=0) for i in range(n)}


def runner(backend, tmp_path=None, **kw):
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    return TeamRunner(env, load_organization("none"), team(backend),
                      log_path=tmp_path / "ep.jsonl" if tmp_path else None,
                      **{"max_rounds": 3, **kw})


def test_dead_backend_stops_the_episode_with_status_error(tmp_path):
    dead = ScriptedBackend([BackendError("HTTP 500: boom", kind="http", status=500)], cycle=True)
    result = runner(dead, tmp_path).run(seed=0)
    s = result.summary.to_dict()
    assert s["episode_status"] == "error"
    assert s["stop_reason"] == "transport failures"
    assert s["stop_detail"] == ("3 model calls in a row failed after retries "
                                "(last: http: HTTP 500: boom)")
    assert len(dead.calls) == 3  # round 0's communicate stage, then nothing more
    assert s["backend_fallbacks"] == 3
    records = list(read_dicts(tmp_path / "ep.jsonl"))
    stopped = [r for r in records if r.get("type") == "stopped"]
    assert stopped == [{"record": "event", "round": 0, "tick": 0, "type": "stopped",
                        "status": "error", "reason": "transport failures",
                        "detail": s["stop_detail"]}]
    assert records[-1]["record"] == "summary" and records[-1]["episode_status"] == "error"


def test_flaky_backend_that_answers_in_between_plays_on():
    ok = {"receivers": ["everyone"], "message": "", "thoughts": ""}
    flaky = ScriptedBackend([BackendError("timeout", kind="timeout"), ok, ok], cycle=True)
    result = runner(flaky).run(seed=0)
    assert result.summary.episode_status == "complete"
    assert result.summary.stop_reason == "max rounds"
    assert result.summary.stop_detail is None
    assert result.summary.rounds == 3 and result.summary.backend_fallbacks > 0


def test_no_limit_plays_every_round():
    dead = ScriptedBackend([BackendError("HTTP 500: boom", kind="http", status=500)], cycle=True)
    result = runner(dead, max_transport_failures=None).run(seed=0)
    assert result.summary.episode_status == "complete"
    assert result.summary.rounds == 3


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
    s = result.summary.to_dict()
    assert s["episode_status"] == "error"
    assert s["stop_detail"].startswith("2 model calls in a row failed after retries (last: "
                                       "connection: connection failed to http://127.0.0.1:")
    # every request the server saw is an attempt in the decision records
    assert s["model_requests"] == s["failed_requests"] == sent == 4
    assert s["failed_requests_by_kind"] == {"connection": 4}
    decisions = [r for r in read_dicts(tmp_path / "ep.jsonl") if r.get("phase")]
    assert [len(r["attempts"]) for r in decisions] == [2, 2]
    assert {a["error"] for r in decisions for a in r["attempts"]} == {"APIConnectionError"}


def test_a_redirect_loop_stops_the_run_saying_redirects(tmp_path):
    # The attempts recorded TooManyRedirects, the reason said "connection failed to":
    # a network problem, where the server answered every request with a 307 or 308.
    with FaultServer("redirect_loop") as server:
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="k",
                                timeout=5.0, max_retries=1, backoff=0.01)
        result = runner(backend, tmp_path, max_transport_failures=2).run(seed=0)
        where = server.base_url
    s = result.summary.to_dict()
    assert s["episode_status"] == "error"
    assert s["stop_detail"] == (
        "2 model calls in a row failed after retries (last: connection: too many redirects "
        f"from {where} (a 307/308 loop: check the base URL))")
    assert s["failed_requests_by_kind"] == {"connection": 4}
    decisions = [r for r in read_dicts(tmp_path / "ep.jsonl") if r.get("phase")]
    assert {(a["error"], a["detail"]) for r in decisions for a in r["attempts"]} == {
        ("APIConnectionError", "TooManyRedirects: Exceeded maximum allowed redirects.")}


def test_cli_run_against_a_dead_server_exits_1_with_the_reason(tmp_path, monkeypatch, capsys):
    import json

    from orgteams.cli.main import main

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


# --- replies that are never valid, exact counting, why an episode ended -----------------

NOT_JSON = "Sure! I would pick a."  # what a chat model says when it ignores the schema


def _decision_lines(path):
    return [r for r in read_dicts(path) if r.get("phase")]


def _counted(lines):
    return [r for r in lines if not any(n.startswith("not counted") for n in r["notes"])]


def broadcast_runner(backend, tmp_path, **kw):
    """Broadcast: every stage asks all three agents at once (the parallel case)."""
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=3)
    return TeamRunner(env, load_organization("broadcast"), team(backend), max_rounds=5,
                      log_path=tmp_path / "ep.jsonl", **kw)


def test_a_model_that_never_answers_validly_stops_as_invalid_replies(tmp_path):
    garbage = ScriptedBackend([NOT_JSON], cycle=True)
    s = broadcast_runner(garbage, tmp_path).run(seed=0).summary.to_dict()
    assert (s["episode_status"], s["stop_reason"]) == ("error", "invalid replies")
    assert s["stop_detail"] == ("10 model calls in a row gave no valid reply "
                                "(last: it is not a JSON object)")
    # round 0: 3 + 3 + 3 calls; round 1's first stage: the 10th call stops it, the two
    # calls that ran beside it finished and are on record, not counted; none started after
    assert len(garbage.calls) == 12
    lines = _decision_lines(tmp_path / "ep.jsonl")
    assert len(lines) == 12 and len(_counted(lines)) == 10
    assert all(r["parsed"] is None and r["replies"] == [NOT_JSON] for r in lines)
    assert [r["notes"] for r in lines[9:]] == [
        ["not used: the episode stopped (invalid replies)"],
        *[["not counted: finished after the call that stopped the episode (invalid replies)",
           "not used: the episode stopped (invalid replies)"]] * 2]
    assert (s["decisions"], s["fallback_count"], s["fallback_rate"]) == (12, 12, 1.0)
    assert s["invalid_reply_fallbacks"] == 12 and s["backend_fallbacks"] == 0
    assert s["ticks"] == 1  # round 0 stepped once; round 1's stage was not used
    written = list(read_dicts(tmp_path / "ep.jsonl"))
    assert [r for r in written if r.get("type") == "stopped"] == [
        {"record": "event", "round": 1, "tick": 1, "type": "stopped", "status": "error",
         "reason": "invalid replies", "detail": s["stop_detail"]}]
    assert written[-1]["record"] == "summary" and written[-1]["stop_reason"] == "invalid replies"
    assert written[-1]["fallback_rate"] == 1.0


def test_one_valid_reply_ends_a_run_of_invalid_ones(tmp_path):
    # 8 calls with nothing valid, then one valid: never 10 in a row
    mixed = ScriptedBackend(lambda messages, schema: (
        json.dumps(minimal_instance(schema)) if len(mixed.calls) % 9 == 0 else NOT_JSON))
    s = runner(mixed, tmp_path, max_invalid_replies=10).run(seed=0).summary.to_dict()
    assert (s["episode_status"], s["stop_reason"], s["stop_detail"]) == (
        "complete", "max rounds", None)
    assert 0.5 < s["fallback_rate"] < 1.0 and s["invalid_reply_fallbacks"] > 10


def test_transport_failures_neither_add_to_nor_end_a_run_of_invalid_replies(tmp_path):
    dead = BackendError("HTTP 500: boom", kind="http", status=500)
    # invalid, invalid, failed, invalid: 3 calls in a row without a valid reply
    backend = ScriptedBackend([NOT_JSON, NOT_JSON, dead, NOT_JSON], cycle=True)
    s = runner(backend, tmp_path, max_invalid_replies=3).run(seed=0).summary.to_dict()
    assert (s["stop_reason"], s["stop_detail"]) == (
        "invalid replies", "3 model calls in a row gave no valid reply "
                           "(last: it is not a JSON object)")
    # three talk turns one by one, then the act phase asks all three at once: its first
    # call is the 3rd invalid one; the two beside it finished too and are not counted
    lines = _decision_lines(tmp_path / "ep.jsonl")
    assert [(r["phase"], r["agent"]) for r in _counted(lines)] == [
        ("communicate", "agent_0"), ("communicate", "agent_1"), ("communicate", "agent_2"),
        ("act", "agent_0")]
    assert len(backend.calls) == len(lines) == 6 and s["backend_fallbacks"] == 1


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_bad_invalid_reply_limit_is_a_user_error(bad):
    with pytest.raises(UserError, match=re.escape(
            f"max_invalid_replies must be a positive number of calls or None, got {bad!r}")):
        runner(ScriptedBackend(), max_invalid_replies=bad)


class _SlowAlice(ScriptedBackend):
    """Every call fails; Alice's calls finish last (so completion order is not speaking
    order)."""

    async def acomplete(self, messages, **kw):
        if messages[0]["content"].startswith("You are Alice"):
            await asyncio.sleep(0.2)
        return await super().acomplete(messages, **kw)


def test_the_transport_stop_counts_exactly_in_the_order_calls_finish(tmp_path):
    # Limit 4: stage 0 fails 3 times, then stage 1's three parallel calls. Counted per
    # stage the stop said "6 model calls"; counted per call, the 4th (Bob's, which
    # finishes first) stops it, and the two still running are recorded, not counted.
    dead = _SlowAlice([BackendError("HTTP 500: boom", kind="http", status=500)], cycle=True)
    s = broadcast_runner(dead, tmp_path, max_transport_failures=4).run(seed=0).summary.to_dict()
    assert s["stop_detail"] == ("4 model calls in a row failed after retries "
                                "(last: http: HTTP 500: boom)")
    lines = _decision_lines(tmp_path / "ep.jsonl")
    assert [(r["stage"], r["agent"]) for r in lines] == [
        (0, "agent_0"), (0, "agent_1"), (0, "agent_2"),
        (1, "agent_0"), (1, "agent_1"), (1, "agent_2")]
    assert [(r["agent"], r["error"]) for r in _counted(lines)][-1] == (
        "agent_1", "http: HTTP 500: boom")
    assert [r["agent"] for r in lines if r not in _counted(lines)] == ["agent_0", "agent_2"]
    assert len(dead.calls) == 6 and s["ticks"] == 0  # the act phase never ran


def test_parallel_calls_to_a_failing_server_are_all_on_record(tmp_path):
    with FaultServer("http500") as server:
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="k",
                                timeout=5.0, max_retries=0, backoff=0.01)
        s = broadcast_runner(backend, tmp_path, max_transport_failures=2).run(seed=0) \
            .summary.to_dict()
        sent = len(server.requests)
    assert s["stop_detail"].startswith("2 model calls in a row failed after retries")
    lines = _decision_lines(tmp_path / "ep.jsonl")
    assert len(_counted(lines)) == 2 and len(lines) == 3  # the third ran beside them
    assert sum(len(r["attempts"]) for r in lines) == sent == 3  # every request is recorded


@pytest.mark.parametrize(("kw", "reason"), [
    ({}, "goal met"), ({"max_rounds": 2}, "max rounds"), ({"max_ticks": 5}, "max ticks")])
def test_the_log_says_why_a_complete_episode_ended(tmp_path, kw, reason):
    from orgteams.run import run_episode

    log = tmp_path / "ep.jsonl"
    s = run_episode(layout="studio", organization="leader", backend="planner", seed=4,
                    log_path=log, **kw).summary.to_dict()
    last = list(read_dicts(log))[-1]
    assert last["record"] == "summary" and last["episode_status"] == "complete"
    assert (last["stop_reason"], last["stop_detail"]) == (reason, None)
    assert last["success"] is (reason == "goal met") and s["stop_reason"] == reason
    if reason == "max ticks":
        assert last["ticks"] == 5


def test_cli_run_prints_and_returns_the_stop_reason(tmp_path, capsys):
    from orgteams.cli.main import main

    log = tmp_path / "ep.jsonl"
    assert main(["run", "--layout", "studio", "--backend", "planner", "--max-rounds", "2",
                 "--log", str(log), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"stop_reason\s.*max rounds", out)
    assert re.search(r"fallback_rate\s.*0", out)
    assert main(["run", "--layout", "studio", "--backend", "planner", "--max-rounds", "2",
                 "--log", str(log), "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["stop_reason"], summary["fallback_rate"]) == ("max rounds", 0.0)


def test_cli_run_against_a_model_that_never_answers_json_exits_1(tmp_path, monkeypatch,
                                                                  capsys):
    from orgteams.cli.main import main

    with FaultServer("invalid_json") as server:
        monkeypatch.setenv("ORGTEAMS_BASE_URL", server.base_url)
        monkeypatch.setenv("ORGTEAMS_API_KEY", "k")
        log = tmp_path / "ep.jsonl"
        code = main(["run", "--layout", "studio", "--backend", "openai:garbage-cli-model",
                     "--org", "none", "--max-rounds", "4", "--max-invalid-replies", "2",
                     "--log", str(log), "--quiet", "--json"])
    captured = capsys.readouterr()
    assert code == 1
    summary = json.loads(captured.out)
    assert (summary["episode_status"], summary["stop_reason"]) == ("error", "invalid replies")
    assert summary["fallback_rate"] == 1.0 and summary["failed_requests"] == 0
    assert captured.err.strip().splitlines()[-1] == (
        "orgteams run: episode stopped (error): 2 model calls in a row gave no valid reply "
        "(last: it is not a JSON object)")
    assert list(read_dicts(log))[-1]["stop_reason"] == "invalid replies"


def test_an_episode_whose_model_never_answered_validly_is_an_error_under_the_limit(tmp_path):
    # 6 calls, all invalid: under the limit of 10 in a row, it used to end 'complete'
    # (a sweep row marked ok, averaged) though the model never played
    garbage = ScriptedBackend([NOT_JSON], cycle=True)
    s = runner(garbage, tmp_path, max_rounds=1).run(seed=0).summary.to_dict()
    assert (s["episode_status"], s["stop_reason"], s["stop_detail"]) == (
        "error", "invalid replies",
        "none of the 6 model calls gave a valid reply (last: it is not a JSON object)")
    assert [r for r in read_dicts(tmp_path / "ep.jsonl") if r.get("type") == "stopped"] == [
        {"record": "event", "round": 1, "tick": 1, "type": "stopped", "status": "error",
         "reason": "invalid replies", "detail": s["stop_detail"]}]


def test_an_episode_whose_model_calls_all_failed_is_an_error_under_the_limit():
    dead = ScriptedBackend([BackendError("HTTP 500: boom", kind="http", status=500)], cycle=True)
    s = runner(dead, max_rounds=1, max_transport_failures=10).run(seed=0).summary
    assert (s.episode_status, s.stop_reason, s.stop_detail) == (
        "error", "transport failures",
        "all 6 model calls failed after retries (last: http: HTTP 500: boom)")


def test_one_valid_reply_or_a_waived_limit_keeps_the_episode_complete():
    ok = {"receivers": ["everyone"], "message": "", "thoughts": ""}
    once = ScriptedBackend([ok, *[NOT_JSON] * 50])
    assert runner(once, max_rounds=1).run(seed=0).summary.episode_status == "complete"
    garbage = ScriptedBackend([NOT_JSON], cycle=True)
    s = runner(garbage, max_rounds=1, max_invalid_replies=None).run(seed=0).summary
    assert (s.episode_status, s.stop_reason) == ("complete", "max rounds")
