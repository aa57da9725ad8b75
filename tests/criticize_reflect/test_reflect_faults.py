"""The Critic over a server that dies mid-reply: a recorded fallback, every request kept."""

from __future__ import annotations

from fault_server import FaultServer  # noqa: E402  (needs the path above)

from orgteams.agents.backends import OpenAIBackend
from orgteams.criticize_reflect.critic import Critic
from orgteams.organizations.spec.library import load_organization


def test_truncated_body_is_a_recorded_critic_fallback_not_a_crash():
    with FaultServer("truncated") as server:
        backend = OpenAIBackend("fake-model", base_url=server.base_url, api_key="k",
                                max_retries=1, backoff=0.01)
        critique = Critic(backend).criticize(load_organization("leader"), {"agents": {}}, 42.0,
                                             team={"agent_0": "agent_0"})
        sent = len(server.requests)
    assert critique.fallback.startswith("backend error (protocol: unreadable reply body "
                                        "(JSONDecodeError: ")
    requests = critique.call["attempts"]
    assert sent == 2 and [(r["kind"], r["error"]) for r in requests] == [
        ("protocol", "JSONDecodeError")] * 2


def test_reflect_with_a_dead_team_server_records_the_iteration_and_exits_1(
        tmp_path, monkeypatch, capsys):
    import json

    from orgteams.cli.main import main

    monkeypatch.setenv("ORGTEAMS_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    monkeypatch.setenv("ORGTEAMS_MAX_RETRIES", "0")
    out = tmp_path / "reflect"
    argv = ["reflect", "--layout", "studio", "--backend", "openai:dead-reflect-model",
            "--critic", "scripted", "--coordinator", "scripted", "--iterations", "2",
            "--max-rounds", "2", "--out", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]  # (llama.cpp may log first)
    assert err.startswith("orgteams reflect: stopped: iteration 0: the episode stopped early "
                          "(error: 3 model calls in a row failed after retries")
    failed = json.loads((out / "iteration_0" / "failed.json").read_text())
    assert failed["episode_status"] == "error"
    assert failed["episode"]["failed_requests_by_kind"] == {"connection": 3}
    assert not (out / "history.jsonl").exists() and not (out / "best.yaml").exists()
