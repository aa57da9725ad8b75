"""The reflect loop: exact cost, every iteration saved, resume, best.yaml, the ablation."""

from __future__ import annotations

import json

import pytest

from orgteams.agents.backends import ScriptedBackend
from orgteams.criticize_reflect import Coordinator, Critic, episode_cost, reflect
from orgteams.organizations.spec.library import load_organization
from orgteams.organizations.spec.organization import Organization


class FakeEpisodes:
    """Episodes whose ticks depend on the organization's rules (fewer rules: slower)."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.played: list[tuple[int, str]] = []
        self.fail_at = fail_at

    def __call__(self, org: Organization, k: int) -> dict:
        if k == self.fail_at:
            self.fail_at = None
            raise KeyboardInterrupt("crash")  # an interruption mid-iteration
        self.played.append((k, org.name))
        ticks = 100 - 10 * len(org.rules.notes)
        records = [{"round": 0, "agent": "agent_0", "phase": "communicate", "message": "hi",
                    "message_tokens": 1}]
        return {"summary": {"ticks": ticks, "comm_tokens_per_step": 2.5, "num_agents": 3,
                            "success": True}, "records": records}


def coordinator_adding_rules() -> Coordinator:
    def rule(messages, schema):
        n = messages[1]["content"].count("## Iteration")
        return {"analysis": "more rules", "pick": 0, "candidates": [
            {"name": f"rules{n}", "rules": [f"rule {i}" for i in range(n)]}]}
    return Coordinator(ScriptedBackend(rule), k=1)


def test_cost_formula_is_exact():
    assert episode_cost(52, 10.5) == 62.5
    assert episode_cost(52, 10.5, step_weight=2.0, token_weight=0.5) == 52 * 2.0 + 10.5 * 0.5
    assert episode_cost(0, 0.0, 3.0, 7.0) == 0.0


def test_every_iteration_is_saved_and_best_yaml_loads_back(tmp_path):
    episodes = FakeEpisodes()
    critic = Critic(ScriptedBackend())
    result = reflect(load_organization("leader"), episodes, critic, coordinator_adding_rules(),
                     iterations=3, out_dir=tmp_path, step_weight=1.0, token_weight=2.0)
    assert episodes.played == [(0, "leader"), (1, "rules1"), (2, "rules2")]
    assert [r["cost"] for r in result.history] == [105.0, 95.0, 85.0]
    for k in range(3):
        folder = tmp_path / f"iteration_{k}"
        assert Organization.from_yaml(folder / "organization.yaml").name == episodes.played[k][1]
        assert json.loads((folder / "summary.json").read_text())["cost"] == result.history[k][
            "cost"]
        assert json.loads((folder / "critique.json").read_text())["fallback"] is None
    assert (tmp_path / "iteration_1" / "proposal.json").is_file()
    assert not (tmp_path / "iteration_2" / "proposal.json").exists()  # no proposal after last
    lines = (tmp_path / "history.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [0, 1, 2]
    best = Organization.from_yaml(tmp_path / "best.yaml")
    assert best == result.best and best.name == "rules2" and result.best_cost == 85.0
    assert json.loads((tmp_path / "best.json").read_text())["iteration"] == 2
    assert critic.calls == 3


def test_rerun_resumes_after_the_last_finished_iteration(tmp_path):
    episodes = FakeEpisodes(fail_at=2)
    coordinator = coordinator_adding_rules()
    with pytest.raises(KeyboardInterrupt):
        reflect(load_organization("leader"), episodes, Critic(ScriptedBackend()), coordinator,
                iterations=4, out_dir=tmp_path)
    assert len((tmp_path / "history.jsonl").read_text().splitlines()) == 2
    result = reflect(load_organization("leader"), episodes, Critic(ScriptedBackend()),
                     coordinator, iterations=4, out_dir=tmp_path)
    assert result.resumed_from == 2 and result.ran == [2, 3]
    assert [k for k, _ in episodes.played] == [0, 1, 2, 3]
    assert episodes.played[2] == (2, "rules2")  # the organization chosen before the crash
    # a finished run asked for more iterations continues (the coordinator proposes first)
    more = reflect(load_organization("leader"), episodes, Critic(ScriptedBackend()),
                   coordinator, iterations=5, out_dir=tmp_path)
    assert more.ran == [4] and episodes.played[-1] == (4, "rules4")


def test_torn_history_line_is_dropped_and_other_settings_are_refused(tmp_path):
    episodes = FakeEpisodes()
    org = load_organization("leader")
    reflect(org, episodes, Critic(ScriptedBackend()), coordinator_adding_rules(), iterations=2,
            out_dir=tmp_path)
    with (tmp_path / "history.jsonl").open("a") as f:
        f.write('{"iteration": 2, "cost"')  # crash while appending
    result = reflect(org, episodes, Critic(ScriptedBackend()), coordinator_adding_rules(),
                     iterations=3, out_dir=tmp_path)
    assert result.ran == [2] and len(result.history) == 3
    with pytest.raises(ValueError, match="different token_weight"):
        reflect(org, episodes, Critic(ScriptedBackend()), coordinator_adding_rules(),
                iterations=3, out_dir=tmp_path, token_weight=5.0)


def test_ablation_without_critic_never_calls_it(tmp_path):
    critic_backend = ScriptedBackend([])  # any call would raise ScriptExhaustedError
    critic = Critic(critic_backend)
    coordinator = coordinator_adding_rules()
    result = reflect(load_organization("leader"), FakeEpisodes(), critic, coordinator,
                     iterations=3, out_dir=tmp_path, use_critic=False)
    assert critic.calls == 0 and critic_backend.calls == []
    assert all(r["critique"] is None for r in result.history)
    assert "skipped" in json.loads((tmp_path / "iteration_0" / "critique.json").read_text())
    assert "Critic's assessment" not in coordinator.backend.calls[-1][1]["content"]
    assert result.to_dict()["history"][0]["critic_used"] is False


def test_critic_and_coordinator_fallbacks_do_not_stop_the_loop(tmp_path):
    critic = Critic(ScriptedBackend(["nope"], cycle=True))
    coordinator = Coordinator(ScriptedBackend(["nope"], cycle=True))
    org = load_organization("leader")
    result = reflect(org, FakeEpisodes(), critic, coordinator, iterations=2, out_dir=tmp_path)
    first = result.to_dict()["history"][0]
    assert first["critic_fallback"].startswith("invalid reply")
    assert first["coordinator_fallback"].startswith("invalid reply")
    assert first["next_organization"] == "leader"  # current organization kept


class ServerGoneAt(FakeEpisodes):
    """Iteration ``k`` stops early with episode_status error (its model server died)."""

    def __init__(self, gone_at: int) -> None:
        super().__init__()
        self.gone_at = gone_at

    def __call__(self, org: Organization, k: int) -> dict:
        result = super().__call__(org, k)
        if k == self.gone_at:
            self.gone_at = None
            result["summary"].update(episode_status="error", stop_reason="3 model calls in a "
                                     "row failed after retries (last: connection: refused)")
        return result


def test_errored_episode_is_recorded_not_scored_and_retried_on_rerun(tmp_path):
    import re

    from orgteams.criticize_reflect.loop import EpisodeFailed

    episodes, critic = ServerGoneAt(1), Critic(ScriptedBackend())
    with pytest.raises(EpisodeFailed, match=re.escape(
            "iteration 1: the episode stopped early (error: 3 model calls in a row failed "
            "after retries (last: connection: refused)); it is not scored. Recorded in "
            f"{tmp_path / 'iteration_1' / 'failed.json'}; the 1 finished iteration(s) are "
            "kept; rerun to retry it")):
        reflect(load_organization("leader"), episodes, critic, coordinator_adding_rules(),
                iterations=3, out_dir=tmp_path)
    failed = json.loads((tmp_path / "iteration_1" / "failed.json").read_text())
    assert failed["episode_status"] == "error" and failed["episode"]["ticks"] == 105 - 15
    assert not (tmp_path / "iteration_1" / "summary.json").exists()  # never scored
    assert critic.calls == 1  # the Critic never saw the failed episode
    assert [json.loads(x)["iteration"] for x in
            (tmp_path / "history.jsonl").read_text().splitlines()] == [0]
    result = reflect(load_organization("leader"), episodes, critic,
                     coordinator_adding_rules(), iterations=3, out_dir=tmp_path)
    assert result.resumed_from == 1 and result.ran == [1, 2]
    assert not (tmp_path / "iteration_1" / "failed.json").exists()
    assert (tmp_path / "iteration_1" / "summary.json").is_file()


def test_corrupted_middle_history_line_warns_and_keeps_the_rest(tmp_path):
    episodes = FakeEpisodes()
    reflect(load_organization("leader"), episodes, Critic(ScriptedBackend()),
            coordinator_adding_rules(), iterations=3, out_dir=tmp_path)
    path = tmp_path / "history.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = '{"iteration": 1, "organ\n'  # bit rot in the middle
    path.write_text("".join(lines))
    with pytest.warns(UserWarning, match=f"{path}:2: unreadable history line skipped"):
        result = reflect(load_organization("leader"), episodes, Critic(ScriptedBackend()),
                         coordinator_adding_rules(), iterations=4, out_dir=tmp_path)
    assert [r["iteration"] for r in result.history] == [0, 2, 3]
    assert result.ran == [3]  # iteration 2 was kept, not rerun
    assert episodes.played[-1][0] == 3 and len(episodes.played) == 4


def test_a_run_whose_every_coordinator_call_fell_back_says_so(tmp_path):
    from orgteams.agents.backends import BackendError
    from orgteams.criticize_reflect.heuristic import HeuristicCoordinator

    dead = Coordinator(ScriptedBackend([BackendError("HTTP 500: boom", kind="http",
                                                     status=500)], cycle=True))
    result = reflect(load_organization("leader"), FakeEpisodes(), None, dead, iterations=3,
                     out_dir=tmp_path / "dead", use_critic=False)
    assert [h["coordinator_fallback"] for h in result.to_dict()["history"]] == [
        "backend error (http: HTTP 500: boom)"] * 2 + [None]
    assert result.coordinator_failure() == (
        "every Coordinator call fell back (2 of 2; last: backend error (http: HTTP 500: "
        "boom)); the organization was never revised. Results are kept in "
        f"{tmp_path / 'dead'}")
    # One model decision that was not a fallback: the run revised something.
    proposal = {"analysis": "more rules", "pick": 0,
                "candidates": [{"name": "rules1", "rules": ["rule 0"]}]}
    answers = [BackendError("HTTP 500: boom", kind="http", status=500), proposal]
    mixed = Coordinator(ScriptedBackend(answers), k=1)
    result = reflect(load_organization("leader"), FakeEpisodes(), None, mixed, iterations=3,
                     out_dir=tmp_path / "mixed", use_critic=False)
    assert [h["coordinator_fallback"] is None for h in result.to_dict()["history"]] == [
        False, True, True]
    assert result.coordinator_failure() is None
    # No model was asked: one iteration, or the heuristic Coordinator (its "no untried
    # edit is valid" is an answer, not a failure).
    one = reflect(load_organization("leader"), FakeEpisodes(), None, dead, iterations=1,
                  out_dir=tmp_path / "one", use_critic=False)
    assert one.coordinator_failure() is None
    heuristic = reflect(load_organization("leader"), FakeEpisodes(), None,
                        HeuristicCoordinator(), iterations=2, out_dir=tmp_path / "h",
                        use_critic=False)
    assert heuristic.coordinator_failure() is None
