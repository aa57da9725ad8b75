"""Members with nobody to message stay silent: under ``channels: none`` no member kind
sends (or counts tokens for) a message that no teammate can receive."""

from __future__ import annotations

import pytest
from doubles import Talker, records_of

from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.rounds.shocks import Shock
from orgteams.run import run_episode


def planners(org, seed=0):
    return run_episode(task="prepare_afternoon_tea", layout="apartment", organization=org,
                       agents=4, backend="planner", seed=seed, log_path=None)


def messages(result):
    return [r for r in records_of(result) if r.get("phase") == "communicate" and r.get("message")]


def notes(result, prefix):
    return [n for r in records_of(result) for n in r.get("notes") or () if n.startswith(prefix)]


@pytest.mark.parametrize("base", ["leader", "decentralized"])
def test_planners_under_channels_none_send_nothing(base):
    spoken = planners(load_organization(base))
    assert messages(spoken) and spoken.summary.comm_tokens_per_step > 0  # they do talk
    silent = planners(load_organization(base).updated(channels="none"))
    s = silent.summary.to_dict()
    assert messages(silent) == []
    assert (s["messages_sent"], s["message_tokens_sent"], s["message_tokens_delivered"]) \
        == (0, 0, 0)
    assert s["comm_tokens_per_step"] == 0.0 and s["delivered_tokens_per_step"] == 0.0
    assert s["success"]  # they still do the task, each on what it sees itself
    # what they would have said is in their decision records, not lost
    said = notes(silent, "no teammate may be messaged: ")
    assert said and all(" message(s) not said: " in n for n in said)
    assert notes(silent, "undeliverable") == []  # the planner kept quiet itself


def test_an_org_file_with_channels_none_runs_silent(tmp_path):
    path = tmp_path / "quiet.yaml"
    path.write_text(load_organization("leader").updated(name="quiet", channels="none")
                    .to_yaml())
    result = planners(str(path))
    assert result.summary.organization == "quiet"
    assert messages(result) == [] and result.summary.comm_tokens_per_step == 0.0


def talkers(org, n=3, rounds=2, **kw):
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=n)
    members = {f"agent_{i}": Talker(f"agent_{i}") for i in range(n)}
    return TeamRunner(env, org, members, max_rounds=rounds, **kw).run(seed=0)


def test_the_round_loop_sends_no_message_nobody_can_receive():
    heard = talkers(load_organization("decentralized"))
    assert heard.summary.messages_sent == 6 and heard.summary.message_tokens_sent > 0
    result = talkers(load_organization("decentralized").updated(channels="none"))
    assert messages(result) == []
    assert result.summary.message_tokens_sent == 0
    assert result.summary.comm_tokens_per_step == 0.0
    assert notes(result, "undeliverable") == [
        "undeliverable: 1 message(s) no teammate can receive not sent: text"] * 6
    silent = [r for r in records_of(result) if r.get("phase") == "communicate"]
    assert len(silent) == 6 and all(r["message"] is None for r in silent)


def test_a_message_to_removed_teammates_only_is_not_sent():
    result = talkers(load_organization("decentralized"), n=2, rounds=2,
                     shocks=[Shock(1, "remove", "agent_1")])
    sent = [(r["round"], r["agent"]) for r in messages(result)]
    assert sent == [(0, "agent_0"), (0, "agent_1")]  # round 1: agent_0 is alone
    assert notes(result, "undeliverable") == [
        "undeliverable: 1 message(s) no teammate can receive not sent: text"]
