"""One owner counts an episode's message tokens: the round loop's records, every
member's budget, the metrics and the summary use the episode's tokenizer (in
``run_episode``: its BackendPool's), not the module default."""

from __future__ import annotations

from collections import Counter

from doubles import Talker, records_of

from orgteams.agents.backends.pool import BackendPool
from orgteams.agents.llm.tokens import REGEX_NAME, Tokenizer, approximate_note
from orgteams.agents.planner.planner_member import PlannerMember
from orgteams.agents.records import decision_line
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.organizations.metrics.episode_metrics import episode_metrics
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.run import run_episode

PER_MESSAGE = 1000


class Marked(Tokenizer):
    """Counts 1000 tokens a message, which no real tokenizer does, and keeps what it
    counted."""

    def __init__(self) -> None:
        super().__init__(REGEX_NAME)
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return "marked-1000"

    def count(self, text: str) -> int:
        self.texts.append(text)
        return PER_MESSAGE if text else 0


def two_talker(agent_id):
    """Broadcasts two short messages every stage and keeps no budget itself."""
    return Talker(agent_id, ("{me} says hi", "{me} says bye"), model="two-talker")


BUDGET = load_organization("decentralized").updated(rules={
    "assign_work": "self", "report_when": "every_round", "budget": {"tokens": 1500}})


def run(members, tokenizer=None, rounds=3):
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=len(members))
    return TeamRunner(env, BUDGET, members, max_rounds=rounds, tokenizer=tokenizer).run(seed=0)


def sent(result):
    return [r for r in records_of(result) if r.get("phase") == "communicate" and r.get("message")]


def per_round(result):
    return Counter((r["round"], r["agent"]) for r in sent(result))


def test_the_round_loop_budget_and_summary_count_with_the_episodes_tokenizer():
    default = run({a: two_talker(a) for a in ("agent_0", "agent_1")})
    assert set(per_round(default).values()) == {2}  # both fit 1500 tokens by default
    marked = Marked()
    result = run({a: two_talker(a) for a in ("agent_0", "agent_1")}, tokenizer=marked)
    assert set(per_round(result).values()) == {1}  # 1000 + 1000 > 1500: one kept
    assert [r["message_tokens"] for r in sent(result)] == [PER_MESSAGE] * 6
    assert {r["message"] for r in sent(result)} <= set(marked.texts)
    notes = [n for r in records_of(result) for n in r.get("notes") or ()]
    assert notes == ["budget: 1 message(s) over the organization's budget not sent"] * 6
    s = result.summary.to_dict()
    assert s["tokenizer"] == "marked-1000" and s["tokens_approximate"] is None
    assert s["message_tokens_sent"] == 6 * PER_MESSAGE
    assert s["message_tokens_delivered"] == 6 * PER_MESSAGE  # one receiver each
    assert s["comm_tokens_per_step"] == 6 * PER_MESSAGE / s["ticks"]


def test_planners_keep_their_budget_with_the_episodes_tokenizer():
    team = ("agent_0", "agent_1", "agent_2")
    default = run({a: PlannerMember(a) for a in team})
    assert max(per_round(default).values()) >= 2  # statuses and finds fit by default
    result = run({a: PlannerMember(a) for a in team}, tokenizer=Marked())
    assert per_round(result) and set(per_round(result).values()) == {1}
    own = [n for r in records_of(result) for n in r.get("notes") or ()
           if n.startswith("budget: ") and "not sent: " in n]  # the planner's own note
    assert own  # the planner dropped them itself, counting with the episode's tokenizer
    assert {r["message_tokens"] for r in sent(result)} == {PER_MESSAGE}


def test_run_episode_counts_with_its_pools_tokenizer():
    with BackendPool() as pool:
        pool.tokenizer = Marked()
        result = run_episode(task="prepare_afternoon_tea", layout="studio",
                             organization="decentralized", agents=2, backend="planner",
                             seed=0, max_rounds=4, log_path=None, pool=pool)
    s = result.summary.to_dict()
    assert s["tokenizer"] == "marked-1000" and s["messages_sent"] > 0
    assert s["message_tokens_sent"] == s["messages_sent"] * PER_MESSAGE
    assert {r["message_tokens"] for r in sent(result)} == {PER_MESSAGE}


def test_metrics_count_records_without_counts_with_the_given_tokenizer():
    records = [{"round": 0, "tick": 4, "agent": "agent_0", "phase": "communicate",
                "message": "go left", "delivered": ["agent_1", "agent_2"]},
               {"round": 0, "tick": 4, "agent": "agent_1", "phase": "communicate",
                "message": "ok", "delivered": ["agent_0"], "message_tokens": 3}]
    m = episode_metrics([decision_line(r) for r in records], success=True, ticks=4,
                        tokenizer=Marked())
    assert (m.message_tokens_sent, m.message_tokens_delivered) == (PER_MESSAGE + 3,
                                                                   2 * PER_MESSAGE + 3)


def test_the_approximate_note_follows_the_tokenizer_that_counted():
    assert approximate_note("marked-1000") is None
    assert approximate_note(REGEX_NAME).startswith("token counts are APPROXIMATE")
