"""Speed work on the round loop changes no episode: the same seeds give byte-identical
episode logs (issue #28, planner rounds at 256 agents).

Each case plays a small planner team with its JSONL log and compares the log's
SHA-256 with the digest committed in ``logs/planner_log_digests.json``. Only what the
clock decides is blanked first (decision ``wall`` and ``latency`` seconds, the
summary's ``wall_seconds``) and the temporary ``log_path``; every other byte counts:
messages, decisions, ticks, replay lines, summary metrics. Counts use the regex
tokenizer, so the digests do not depend on whether SmolLM2's tokenizer is installed.

A change that is meant to change behaviour (a new rule, a new message) updates the
digests with::

    python tests/organizations/rounds/test_log_digests.py --update [CASE...]

and says in its commit why episodes changed. A speed change must not need that.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

from orgteams.agents.llm.tokens import REGEX_NAME, Tokenizer
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.rounds.shocks import Shock
from orgteams.organizations.spec.library import load_organization
from orgteams.run import build_team

DIGESTS = Path(__file__).parent / "logs" / "planner_log_digests.json"
# (organization, agents, rounds, shocks): the self-organizing paper's protocols and
# the leader hierarchy (paper2-scaling), the other protocols of the round loop, an
# election, and removals (a leader's and a member's seat).
CASES = {
    "sequential-12": ("sequential", 12, 40, ()),
    "shared-12": ("shared", 12, 40, ()),
    "coordinator-12": ("coordinator", 12, 40, ()),
    "leader-12": ("leader", 12, 40, ()),
    "none-6": ("none", 6, 30, ()),
    "broadcast-6": ("broadcast", 6, 30, ()),
    "claim_shared-6": ("claim_shared", 6, 30, ()),
    "batched_sequential-6": ("batched_sequential", 6, 30, ()),
    "elected_leader-6": ("elected_leader", 6, 30, ()),
    "dynamic-6": ("dynamic", 6, 30, ()),
    "leader-6-removals": ("leader", 6, 30, ("remove:agent_0@3", "remove:agent_4@6")),
    "sequential-6-removal": ("sequential", 6, 30, ("remove:agent_2@4",)),
    # crowds: queues in doorways, agents pushed aside, deferring, detours
    "sequential-48": ("sequential", 48, 20, ()),
    "leader-48-removal": ("leader", 48, 20, ("remove:agent_3@5",)),
}
_CLOCK = re.compile(rb'"(wall|latency|wall_seconds)": [-+0-9.eE]+')
_PATH = re.compile(rb'"log_path": "[^"]*"')


def normalized_log(case: str, log: Path) -> bytes:
    """The episode log of ``case``, written to ``log``, with the clock's numbers blanked."""
    organization, agents, rounds, shocks = CASES[case]
    org = load_organization(organization)
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=agents)
    TeamRunner(env, org, build_team("planner", agents, org), max_rounds=rounds,
               log_path=log, shocks=[Shock.parse(s) for s in shocks],
               tokenizer=Tokenizer(REGEX_NAME)).run(seed=1)
    text = _CLOCK.sub(lambda m: b'"' + m.group(1) + b'": 0', log.read_bytes())
    return _PATH.sub(b'"log_path": ""', text)


def digest(case: str, log: Path) -> str:
    """SHA-256 of :func:`normalized_log`."""
    return hashlib.sha256(normalized_log(case, log)).hexdigest()


@pytest.mark.parametrize("case", sorted(CASES))
def test_episode_log_is_byte_identical_to_the_committed_one(case, tmp_path):
    committed = json.loads(DIGESTS.read_text(encoding="utf-8"))
    log = normalized_log(case, tmp_path / f"{case}.jsonl")
    lines = log.count(b"\n")
    assert lines > 3 * CASES[case][2], "the episode played fewer rounds than the case asks"
    assert hashlib.sha256(log).hexdigest() == committed[case], (
        f"the episode log of {case} changed; if behaviour was meant to change, run "
        "python tests/organizations/rounds/test_log_digests.py --update")


@pytest.mark.parametrize("case", ["sequential-6-removal", "leader-6-removals", "elected_leader-6",
                                  "dynamic-6"])
def test_role_badges_are_the_roles_after_every_stage(case, monkeypatch):
    # The window's badges are redrawn only for what changed (they are not in the log):
    # after every stage and phase they are every agent's role now, in team order.
    from orgteams.organizations.rounds import runner as runner_module

    subscribe, checked = runner_module._subscribe_overlay, []

    def check(state, *_):
        expected = {a: r for a in state.team if (r := state.role(a))}
        assert list(state.env.overlay.roles.items()) == list(expected.items())
        checked.append(len(expected))

    def subscribe_and_check(hooks, env):
        subscribe(hooks, env)
        hooks.stage.append(check)
        hooks.phase.append(check)

    monkeypatch.setattr(runner_module, "_subscribe_overlay", subscribe_and_check)
    organization, agents, rounds, shocks = CASES[case]
    org = load_organization(organization)
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=agents)
    TeamRunner(env, org, build_team("planner", agents, org), max_rounds=15,
               shocks=[Shock.parse(s) for s in shocks]).run(seed=1)
    assert len(checked) > 30 and max(checked) > 0


if __name__ == "__main__":  # --update: write the digests of the code as it is now
    import tempfile

    if sys.argv[1:2] != ["--update"]:
        sys.exit("usage: python tests/organizations/rounds/test_log_digests.py --update [CASE...]")
    with tempfile.TemporaryDirectory() as tmp:
        digests = {case: digest(case, Path(tmp) / f"{case}.jsonl") for case in sorted(CASES)
                   if case in sys.argv[2:] or not sys.argv[2:]}
    digests = {**json.loads(DIGESTS.read_text(encoding="utf-8")), **digests}
    digests = {case: digests[case] for case in sorted(CASES)}
    DIGESTS.write_text(json.dumps(digests, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {len(digests)} digests to {DIGESTS}")
