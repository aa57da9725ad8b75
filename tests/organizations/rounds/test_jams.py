"""Nine planners on the house do not jam: the episodes that stalled at the step limit.

On the code before this test, each of these failed at the step limit: ``agent_0``,
removed at round 5, was pushed down the storage corridor onto the only cell next to
cabinet_3, a dead end nobody could pull it out of, and the team queued behind it
("could not reach the cabinet_3: blocked for 26 ticks", 120-156 times an episode).
"""

from __future__ import annotations

import pytest
from doubles import records_of

from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations import load_organization
from orgteams.run import run_episode

# (organization, succession rule, seed, whether no walk at all gave up blocked). Which
# of them lose a walk to a crossing moves with what the planners do: since the planner
# leader stopped re-ordering explored rooms (agents/planner/lead.py), leader/none/15
# loses three. Since a pyramid's vice leaders order their own members (issue 27),
# pyramid/next/9 and pyramid/none/15 lose one walk each in a hallway and
# pyramid/next/16 none; but pyramid/next/15 (the clean case before) and 4 of the 40
# pyramid episodes of seeds 0-19 (next 10, 13, 15; none 13) lose walks at cabinet_3: the
# two vice leaders' groups, who do not hear each other, send three active agents into
# the one-cell-high storage corridor at once (no removed member seals it; they all
# finish). That crowding is a known gap (docs/leadership.md), not tested as fixed here.
JAMMED = [("leader", "next", 15, False), ("leader", "none", 15, False),
          ("pyramid", "next", 9, False), ("pyramid", "next", 16, True),
          ("pyramid", "none", 15, False)]


def _gave_up_blocked(records: list[dict]) -> list[str]:
    return [r["failure_reason"] for r in records
            if r.get("phase") == "act" and "blocked for" in str(r.get("failure_reason"))]


@pytest.mark.parametrize(("org", "succession", "seed", "clean"), JAMMED)
def test_nine_planners_on_the_house_finish_after_losing_their_leader(org, succession, seed,
                                                                     clean):
    organization = load_organization(org)
    organization = organization.updated(
        rules={**organization.model_dump(mode="json")["rules"], "succession": succession})
    result = run_episode(task="prepare_afternoon_tea", layout="house", agents=9,
                         organization=organization, backend="planner", seed=seed,
                         shocks=["remove:agent_0@5"], log_path=None)
    summary = result.summary.to_dict()
    assert summary["success"], summary["units_done"]
    assert summary["ticks"] < summary["step_limit"]
    blocked = _gave_up_blocked(records_of(result))
    assert not [b for b in blocked if "cabinet_3" in b]  # the dead end is never sealed
    if clean:  # (the others still lose a walk or two to hallway crossings)
        assert blocked == []


def test_the_storage_dead_end_is_not_a_parking_cell():
    env = HighLevelEnv(layout="house", task="prepare_afternoon_tea", num_agents=9)
    env.reset(seed=0)
    w = env.base.world.scene.width
    storage = [14 * w + c for c in range(1, 29)]  # the one-cell-high storage corridor
    assert not set(storage) & env.nav.roomy_cells
    assert 11 * w + 22 in env.nav.roomy_cells  # inside bedroom_2, above its storage door
