"""Crowding in narrow places: yielding into pockets, removed members evacuating."""

from __future__ import annotations

import pytest

from orgteams.envs.core.actions import Verb, encode
from orgteams.envs.core.navigation import Navigator
from orgteams.envs.core.tasks import Predicate
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

CUPCAKE_IN_FRIDGE = (Predicate("inside", "cupcake", "fridge", 1),)

# A 1-wide corridor (row 1) with a doorway pocket at (2, 4) into a bedroom below.
CORRIDOR = ["#########",
            "#kkkkkkk#",
            "####+####",
            "#bbbbbbb#",
            "#########"]

# A small room whose row 3 runs on as a dead end to the fridge at (3, 6): (3, 5) is
# the only cell from which the fridge can be reached.
DEAD_END = ["########",
            "#kkk####",
            "#kkk####",
            "#kkkkkF#",
            "########"]


@pytest.mark.parametrize(("door_open", "step"), [(True, 2), (False, 3)])
def test_blocked_walker_yields_into_an_open_doorway_not_back_down_the_corridor(
        inline_layout, make_state, door_open, step):
    layout = inline_layout(CORRIDOR, {"k": "kitchen", "b": "bedroom"})
    w = layout.width
    # agent 1 walks east; agent 0 (right of way) stands in its way, head-on.
    state = make_state(layout, [(1, 5), (1, 4)], doors_open=[door_open])
    walker = Navigator(layout).walker(1, frozenset({1 * w + 7}))
    # Open: south into the doorway, off agent 0's line; closed: back west (the only cell).
    assert walker.next_action(state) == encode(Verb.MOVE, step)


@pytest.mark.parametrize("start", [(1, 1), (3, 4)])  # far, or right behind it
def test_removed_member_in_a_dead_end_walks_out_so_the_fridge_can_be_reached(
        inline_layout, make_state, start):
    # a walker finding it boxed in gives way to it (walkers otherwise go first)
    layout = inline_layout(DEAD_END, furniture={"F": "fridge"})
    w = layout.width
    env = HighLevelEnv(layout=layout, task="put_fridge", num_agents=2)
    env.load_state(make_state(layout, [start, (3, 5)], goal=CUPCAKE_IN_FRIDGE))
    env.set_idle("agent_1", True, obstacle=False)  # removed, standing by the fridge
    _, _, _, _, infos = env.step({"agent_0": "check:fridge"})
    assert infos["agent_0"]["status"] == "done", infos["agent_0"]["failure_reason"]
    assert env.memory("agent_0").furniture["fridge"].open
    pos = env.base.world.agent_pos
    assert pos[0] == 3 * w + 5  # agent 0 stands at the fridge
    assert pos[1] in env.nav.roomy_cells  # agent 1 walked back into the room
    assert infos["agent_1"]["status"] == "idle" and not infos["agent_1"]["needs_decision"]


# A room with the fridge in its bottom-right corner: (3, 5) above it, beside the wall,
# is a narrow cell from which the fridge can be reached.
CORNER = ["#######",
          "#kkkkk#",
          "#kkkkk#",
          "#kkkkk#",
          "#kkkkF#",
          "#######"]


def test_a_removed_member_pushed_onto_a_narrow_cell_does_not_push_the_walker_back(
        inline_layout, make_state):
    # agent_0 walks down the wall to the fridge; agent_1 (removed, at (2, 5)) can only be
    # pushed onto the narrow (3, 5), agent_2 (removed) filling (2, 4). Walking out of
    # the narrow cell, agent_1 used to push agent_0 back up, and again, for ever: a
    # walking teammate has right of way over an evacuating member.
    layout = inline_layout(CORNER, furniture={"F": "fridge"})
    w = layout.width
    env = HighLevelEnv(layout=layout, task="put_fridge", num_agents=3)
    env.load_state(make_state(layout, [(1, 5), (2, 5), (2, 4)], goal=CUPCAKE_IN_FRIDGE))
    for agent in ("agent_1", "agent_2"):
        env.set_idle(agent, True, obstacle=False)
    _, _, _, _, infos = env.step({"agent_0": "check:fridge"})
    assert infos["agent_0"]["status"] == "done", infos["agent_0"]["failure_reason"]
    assert env.memory("agent_0").furniture["fridge"].open
    pos = env.base.world.agent_pos
    assert pos[0] == 3 * w + 5  # agent 0 stands at the fridge
    assert pos[1] in env.nav.roomy_cells and pos[2] in env.nav.roomy_cells
    assert infos["agent_0"]["ticks_elapsed"] <= 4


def test_fixed_obstacle_in_the_dead_end_does_not_evacuate(inline_layout, make_state):
    layout = inline_layout(DEAD_END, furniture={"F": "fridge"})
    w = layout.width
    env = HighLevelEnv(layout=layout, task="put_fridge", num_agents=2)
    env.load_state(make_state(layout, [(1, 1), (3, 5)], goal=CUPCAKE_IN_FRIDGE))
    env.set_idle("agent_1", True)  # an obstacle: never moves
    _, _, _, _, infos = env.step({"agent_0": "check:fridge"})
    assert infos["agent_0"]["failure_reason"].startswith("could not reach the fridge: blocked")
    assert env.base.world.agent_pos[1] == 3 * w + 5


def test_roomy_cells_are_inside_rooms_and_off_furniture(inline_layout):
    layout = inline_layout(DEAD_END, furniture={"F": "fridge"})
    w = layout.width
    roomy = Navigator(layout).roomy_cells
    assert 2 * w + 2 in roomy  # the middle of the room
    assert 3 * w + 4 not in roomy and 3 * w + 5 not in roomy  # the dead-end corridor
    assert 1 * w + 1 not in roomy  # a corner (two floor neighbours)


def _answers_as_every_teammate(crowd, agent: str, got) -> bool:
    """Whether ``got`` (a walker's :class:`Yielding` from the tick's view) answers for
    every agent's cell, and for all cells at once, as the two sets of asking every
    teammate do."""
    view, crowd._tick = crowd._tick, None
    try:
        waiting, lower = crowd.yielding_cells(agent)
    finally:
        crowd._tick = view
    cells = crowd.env.base.world.agent_pos
    return all(got.gives_way(c, outranked) == (c in waiting or (outranked and c in lower))
               for c in cells for outranked in (False, True)) \
        and got.cells(False) == waiting and got.cells(True) == waiting | lower


def test_a_ticks_view_answers_as_asking_every_teammate_in_a_crowd(monkeypatch):
    # 64 agents sent to few places (the coffee table, two rooms) crowd doorways: pushes,
    # deferrals and plans ending mid-tick; every answer of the tick's view is checked
    # against asking every teammate, and so are the episode's ticks.
    from orgteams.envs.highlevel.crowding import Crowd

    fast = Crowd.giving_way
    checked = {"calls": 0, "deferring": 0}

    def both(crowd, agent):
        got = fast(crowd, agent)
        if crowd._tick is not None:
            assert _answers_as_every_teammate(crowd, agent, got)
            checked["calls"] += 1
            checked["deferring"] += bool(crowd._tick.gives_way)
        return got

    monkeypatch.setattr(Crowd, "giving_way", both)
    env = HighLevelEnv(layout="generated:32:0", num_agents=64)
    env.reset(seed=3)
    targets = ["explore:living_room", "goto:kitchen", "explore:kitchen"]
    for _ in range(40):
        actions = {}
        for i, a in enumerate(env.agents):
            if env.needs_decision(a):
                ids = {x.id for x in env.available_actions(a)}
                actions[a] = next((t for t in targets[i % 3:] + targets if t in ids), "wait")
        env.step(actions)
    assert checked["calls"] > 1000 and checked["deferring"] > 0


def test_the_tick_view_answers_as_asking_every_teammate_with_members_evacuating(monkeypatch):
    # the crowd answers who may be walked into from a view of the tick (plans, new
    # plans, evacuating members); on a running team with removed members and
    # abstainers stepping aside (several evacuating at once) every answer equals asking
    # every teammate
    from orgteams.envs.highlevel import crowding
    from orgteams.organizations.rounds.runner import TeamRunner
    from orgteams.organizations.rounds.shocks import Shock
    from orgteams.organizations.spec.library import load_organization
    from orgteams.run import build_team

    ask, answers = crowding.Crowd.giving_way, []

    def both(crowd, agent):
        got = ask(crowd, agent)
        answers.append((crowd._tick is not None, _answers_as_every_teammate(crowd, agent, got),
                        len(crowd.evacuating)))
        return got

    monkeypatch.setattr(crowding.Crowd, "giving_way", both)
    org = load_organization("sequential")
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=24)
    TeamRunner(env, org, build_team("planner", 24, org), max_rounds=15,
               shocks=[Shock.parse(f"remove:agent_{a}@{r}")
                       for a, r in ((1, 2), (5, 3), (9, 4), (2, 4), (3, 4), (4, 4), (6, 4))]
               ).run(seed=1)
    assert len(answers) > 300 and all(same for _, same, _ in answers)
    assert all(viewed for viewed, _, _ in answers)
    assert sum(evacuating > 0 for _, _, evacuating in answers) > 30  # members evacuating
    assert sum(evacuating > 1 for _, _, evacuating in answers) > 10  # several at once



def _detours_checked(monkeypatch, env: HighLevelEnv) -> list[tuple[bool, bool, int, str]]:
    """Whenever a walker of ``env`` asks who gives way to it, the detours it would take
    (``_Obstacles.detour`` to all its goals: outranking and stuck long, to the goals of
    the kitchen, the living room or a room or piece of furniture drawn at random; no
    longer than a bound drawn at random, or any length) are read where it stands, then
    cell by cell in a shuffled order, beside the maps of its free goals blocked on all
    its obstacles' cells (``_Obstacles.keys``, asking every teammate): (from the tick's
    view, same answers, members evacuating, how: "map", "searched" (walled in),
    "pocket" (walled in a pocket found before), "beyond" (no map: longer than the
    bound)) per detour. The same answers: the same map, or none where the plain one
    reads farther than the bound where the walker stands."""
    import random

    from orgteams.envs.core import navigation
    from orgteams.envs.highlevel.crowding import Crowd

    made, rng, searched = [], random.Random(5), []
    ask, search = Crowd.giving_way, navigation.RankedMap.walled_in

    def count(detour, cell, within=navigation.INF):
        searched.append(cell)
        return search(detour, cell, within)

    def both(crowd, agent):
        got = ask(crowd, agent)
        # and a teammate drawn at random, so that pockets found by any rank are asked
        # about by any other (and by either way of walking)
        other = rng.choice(env.agents)
        if other != agent and crowd._tick is not None:
            check(crowd, other, ask(crowd, other))
        check(crowd, agent, got)
        return got

    def check(crowd, agent, got):
        nav, world = env.nav, env.base.world
        a = env.base.agent_index[agent]
        here = world.agent_pos[a]
        rooms = nav.layout.rooms
        goals = rng.choice([nav.room_cells[rooms.index("kitchen")],
                            nav.room_cells[rooms.index("living_room")],
                            rng.choice(list(nav.room_cells) + list(nav.furniture_cells))])
        if here in goals:
            return  # a walker there has arrived: it asks for no detour
        cells = list(range(len(nav.walkable)))
        rng.shuffle(cells)
        cells = [*nav._adjacent[here], *cells[:len(cells) // (1 if rng.random() < 0.1
                                                               else 10)]]
        for lower in rng.sample((True, False), 2):
            occupant = nav.obstacles(world, a, here, got, lower)
            searched.clear()
            within = rng.choice((navigation.INF, rng.randrange(40)))
            # all goals, taken ones blocked
            fast, around = occupant.detour(nav, goals, within)
            # the map the walker made before: of its free goals (FewerGoals.goals)
            taken = occupant.among(goals)
            free = goals - taken if taken and len(taken) < len(goals) else goals
            plain = navigation.LazyMap(nav, free, occupant.keys())
            beyond = fast is None and within < plain[here] < navigation.INF
            how = "map" if fast is not None else "beyond" if beyond \
                else "searched" if searched else "pocket"
            # made from the tick's view (an evacuating member's detour is not)
            viewed = hasattr(got, "_view") and agent not in got._view.evacuating
            made.append((viewed,
                         (around == plain[here] or (beyond and around == navigation.INF))
                         and (fast is None
                              or [fast[c] for c in cells] == [plain[c] for c in cells]),
                         len(crowd.evacuating), how))

    monkeypatch.setattr(Crowd, "giving_way", both)
    monkeypatch.setattr(navigation.RankedMap, "walled_in", count)
    return made


def test_a_detour_from_the_ticks_view_reads_as_one_blocked_on_every_obstacle(monkeypatch):
    # a crowd's detours are made from the tick's table of who steps aside for whom
    # (RankedMap) rather than from the set of every obstacle's cell: the same
    # distances, in a crowd with pushes and deferrals, outranking others or stuck
    env = HighLevelEnv(layout="generated:32:0", num_agents=64)
    made = _detours_checked(monkeypatch, env)
    env.reset(seed=3)
    targets = ["explore:living_room", "goto:kitchen", "explore:kitchen"]
    for _ in range(25):
        actions = {}
        for i, a in enumerate(env.agents):
            if env.needs_decision(a):
                ids = {x.id for x in env.available_actions(a)}
                actions[a] = next((t for t in targets[i % 3:] + targets if t in ids), "wait")
        env.step(actions)
    assert all(same for _, same, _, _ in made)
    assert sum(ranked for ranked, _, _, _ in made) > 1000
    assert sum(how == "map" for *_, how in made) > 100
    assert sum(how == "searched" for *_, how in made) > 100
    assert sum(how == "pocket" for *_, how in made) > 100
    assert sum(how == "beyond" for *_, how in made) > 100


def test_a_detour_from_the_ticks_view_with_members_evacuating_reads_as_the_plain_one(
        monkeypatch):
    # with removed members evacuating (walked into by working teammates, ranked apart
    # among themselves: their own detours are made the plain way) the maps agree too
    from orgteams.organizations.rounds.runner import TeamRunner
    from orgteams.organizations.rounds.shocks import Shock
    from orgteams.organizations.spec.library import load_organization
    from orgteams.run import build_team

    org = load_organization("sequential")
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=24)
    made = _detours_checked(monkeypatch, env)
    TeamRunner(env, org, build_team("planner", 24, org), max_rounds=15,
               shocks=[Shock.parse(f"remove:agent_{a}@{r}")
                       for a, r in ((1, 2), (5, 3), (9, 4), (2, 4), (3, 4), (4, 4), (6, 4))]
               ).run(seed=1)
    assert all(same for _, same, _, _ in made)
    assert sum(ranked and evacuating > 0 for ranked, _, evacuating, _ in made) > 100
    assert sum(not ranked and evacuating > 0 for ranked, _, evacuating, _ in made) > 10


def test_the_view_the_plans_left_is_taken_on_by_the_next_ones_and_the_evacuations(
        monkeypatch):
    # Crowd.plans_start (a step's new plans, on the world the last step's plans advanced
    # on, members made idle or active between) and Crowd._evacuate (the tick's removed
    # members) take the view the plans before them kept true instead of making one:
    # taken, it holds what a fresh one would
    from orgteams.envs.highlevel import crowding
    from orgteams.organizations.rounds.runner import TeamRunner
    from orgteams.organizations.rounds.shocks import Shock
    from orgteams.organizations.spec.library import load_organization
    from orgteams.run import build_team

    org = load_organization("sequential")
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=24)
    take, compared = crowding.Crowd._take_kept, []

    def check(crowd):
        taken, view = take(crowd)
        if view is not None:
            fresh = crowding._TickView.of(crowd)
            compared.append(all(getattr(view, k) == getattr(fresh, k) for k in (
                "agents", "rank", "cell", "at", "by_rank", "waiting", "gives_way",
                "given_way", "evacuating")) and (view._ranked is None
                                                 or view._ranked == fresh.ranked()))
        return taken, view

    monkeypatch.setattr(crowding.Crowd, "_take_kept", check)
    TeamRunner(env, org, build_team("planner", 24, org), max_rounds=30,
               shocks=[Shock.parse(f"remove:agent_{a}@{r}")
                       for a, r in ((1, 2), (5, 3), (9, 4), (2, 4), (3, 4), (4, 4), (6, 4))]
               ).run(seed=1)
    assert len(compared) > 60 and all(compared)
