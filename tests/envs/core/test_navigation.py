"""Navigation: distance maps cached per navigator, doors, detours, impossible goals."""

from __future__ import annotations

import itertools
import random

from orgteams.envs.core.actions import Verb, encode
from orgteams.envs.core.layout import load_layout
from orgteams.envs.core.navigation import (
    INF,
    MAX_CACHED_MAPS,
    FewerGoals,
    LazyMap,
    Navigator,
    Yielding,
    _Obstacles,
)
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv


def test_maps_are_cached_per_navigator_and_bounded():
    nav = Navigator(load_layout("house"))
    goal = nav.furniture_goal(0)
    calls = nav.bfs_calls
    first = nav.distance_map(goal)
    again = nav.distance_map(set(goal))
    assert again is first and nav.bfs_calls == calls + 1
    pairs = itertools.combinations(range(nav.layout.width * nav.layout.height), 2)
    for pair in itertools.islice(pairs, MAX_CACHED_MAPS + 5):  # more than the cache keeps
        nav.distance_map(pair)
    assert len(nav._maps) == MAX_CACHED_MAPS
    other = Navigator(load_layout("house"))  # nothing shared: its own, empty cache
    assert other.bfs_calls == 0 and not other._maps


def test_a_lazy_map_reads_as_the_full_map_in_any_order_of_reads():
    nav = Navigator(load_layout("generated:32:0"))
    rng = random.Random(0)
    cells = list(range(len(nav.walkable)))
    for trial in range(40):
        goals = set(rng.sample(cells, rng.randint(1, 30)))  # some on walls, a set
        blocked = rng.sample(cells, rng.randint(1, 300)) if trial % 2 else ()
        if trial % 4 == 1:
            blocked.append(next(iter(goals)))  # a blocked goal is no goal
        full = nav._bfs(frozenset(goals), blocked)
        lazy = LazyMap(nav, goals, blocked)
        near = rng.sample(cells, 5)  # a walker's first reads, then everything
        assert [lazy[c] for c in near + cells] == [full[c] for c in near + cells]
    assert INF in full and full.count(0) > 0  # walls and goals both read


def _goal_sets(nav: Navigator, rng: random.Random, trial: int) -> frozenset[int]:
    """A room's cells, a piece of furniture's, or cells anywhere (some on walls)."""
    if trial % 3 == 0:
        return frozenset(rng.sample(range(len(nav.walkable)), rng.randint(1, 30)))
    return rng.choice(list(nav.room_cells) + list(nav.furniture_cells))


def test_a_cells_nearest_goals_are_the_goals_at_its_distance():
    nav = Navigator(load_layout("generated:32:0"))
    rng = random.Random(2)
    cells = [c for c in range(len(nav.walkable)) if nav.walkable[c]]
    for trial in range(30):
        goals = _goal_sets(nav, rng, trial)
        dist, near = nav.distance_map(goals), nav.nearest_goals(goals)
        assert nav.nearest_goals(goals) is near  # kept
        for c in rng.sample(cells, 20):
            from_c = nav._bfs(frozenset((c,)), blocked=())
            at_distance = {g for g in goals if from_c[g] == dist[c] < INF}
            assert (near[c] is None) == (dist[c] >= INF) and set(near[c] or ()) == at_distance


def test_a_cells_goals_a_step_farther_are_the_goals_at_its_distance_plus_one():
    nav = Navigator(load_layout("generated:32:0"))
    rng = random.Random(6)
    cells = [c for c in range(len(nav.walkable)) if nav.walkable[c]]
    for trial in range(30):
        goals = _goal_sets(nav, rng, trial)
        dist, near = nav.distance_map(goals), nav.nearest_goals(goals)
        for c in rng.sample(cells, 20):
            from_c = nav._bfs(frozenset((c,)), blocked=())
            farther = {g for g in goals if from_c[g] == dist[c] + 1 < INF}
            assert (near.second(c) is None) == (dist[c] >= INF)
            assert set(near.second(c) or ()) == farther


def test_a_walkers_map_of_its_free_goals_reads_as_the_map_of_the_goals_it_heads_for():
    # A walker heads for its goals less those other agents take (all of them when none
    # or all are taken); the map is read off the map of all its goals where a cell's
    # nearest goals are not all taken, else grown: the values must not differ.
    nav = Navigator(load_layout("generated:32:0"))
    rng = random.Random(1)
    cells = list(range(len(nav.walkable)))
    floor = [c for c in cells if nav.walkable[c]]
    grown = off_full = 0
    for trial in range(300):
        goals = _goal_sets(nav, rng, trial)
        near_goals = [g for g in goals if nav.walkable[g]]
        crowd = rng.sample(near_goals, rng.randint(0, len(near_goals))) \
            + rng.sample(floor, rng.randint(0, 300))
        here = rng.choice(floor)
        at = {c: i for i, c in enumerate([here] + crowd)}
        yielding = Yielding(frozenset(c for c in at if rng.random() < 0.2),
                            frozenset(c for c in at if rng.random() < 0.3))
        occupant = _Obstacles(at, here, None if trial % 5 == 0 else yielding, trial % 2 == 0)
        taken = occupant.among(goals)
        heads_for = goals - taken if taken and len(taken) < len(goals) else goals
        own = nav._bfs(heads_for, blocked=())
        dist = FewerGoals(nav, nav.distance_map(goals), nav.nearest_goals(goals), goals,
                          occupant)
        reads = [here] + [n for _, n in nav.neighbours[here]]  # a walker's reads
        assert [dist[c] for c in reads] == [own[c] for c in reads]
        grown += isinstance(dist._map, LazyMap)
        off_full += dist._map is None
        assert [dist[c] for c in cells] == own and dist.goals() == heads_for
    assert grown > 30 and off_full > 30  # a walker's reads went both ways


def test_a_walkers_free_step_down_is_the_step_its_map_of_free_goals_takes():
    # Walker._downhill_step, _steps_down and _beside read the map of all the goals (and
    # the goals nearest and a step farther) where they can: the steps down and the
    # neighbours' distances are those of the map of the free goals, every neighbour
    # read; where _downhill_step answers, the plain way (_around) takes the same step,
    # and leaves the walker as it was
    env = HighLevelEnv(layout="generated:32:0", num_agents=2)
    env.reset(seed=0)
    state, nav = env.base.world, env.nav
    rng = random.Random(4)
    floor = [c for c in range(len(nav.walkable)) if nav.walkable[c]]
    answered = declined = farther = read_beside = 0
    for trial in range(1500):
        goals = _goal_sets(nav, rng, trial)
        near_goals = [g for g in goals if nav.walkable[g]]
        crowd = rng.sample(near_goals, rng.randint(0, len(near_goals))) \
            + rng.sample(floor, rng.randint(0, 300))
        here = rng.choice([c for c in floor if c not in goals])
        at = {c: i for i, c in enumerate([here] + crowd)}
        yielding = Yielding(frozenset(c for c in at if rng.random() < 0.2),
                            frozenset(c for c in at if rng.random() < 0.3))
        occupant = _Obstacles(at, here, None if trial % 5 == 0 else yielding, trial % 2 == 0)
        fast, plain = nav.walker(7, goals), nav.walker(7, goals)
        for w in (fast, plain):
            w.stuck = trial % 8
            w._near = nav.nearest_goals(goals)
        near = nav.nearest_goals(goals)
        if near[here] and all(g in occupant for g in near[here]):
            farther += any(g not in occupant for g in near.second(here))
        plain_map = FewerGoals(nav, nav.distance_map(goals), nav.nearest_goals(goals), goals,
                               occupant)
        to_go = plain_map[here]
        dist = FewerGoals(nav, nav.distance_map(goals), nav.nearest_goals(goals), goals,
                          occupant)
        got, best, off_full = fast._steps_down(here, occupant, dist)
        assert (got, best) == (
            to_go, [(d, n) for d, n in nav.neighbours[here] if plain_map[n] == to_go - 1])
        if off_full:  # the neighbours read as the steps down were
            beside = [fast._beside(n, to_go, best, occupant, dist)
                      for _, n in nav.neighbours[here]]
            assert beside == [plain_map[n] for _, n in nav.neighbours[here]]
            read_beside += 1
        step = fast._downhill_step(state, here, occupant)
        if step is None:
            declined += 1
            continue
        answered += 1
        assert step == plain._around(state, here, occupant)
        assert (plain.detour, plain._pause) == (None, 0)
    assert answered > 100 and declined > 100  # both ways, many times
    assert farther > 50  # steps down read off the goals a step farther too
    assert read_beside > 500


def test_obstacles_among_goals_cell_by_cell_are_those_of_all_obstacles(monkeypatch):
    # _Obstacles.among asks about a few cells one by one, and takes many out of the set
    # of every obstacle: both give the same cells
    from orgteams.envs.core import navigation

    nav = Navigator(load_layout("generated:32:0"))
    rng = random.Random(3)
    floor = [c for c in range(len(nav.walkable)) if nav.walkable[c]]
    for trial in range(200):
        goals = _goal_sets(nav, rng, trial)
        crowd = rng.sample(sorted(goals), rng.randint(0, len(goals))) \
            + rng.sample(floor, rng.randint(0, 300))
        here = rng.choice(crowd or floor)
        at = {c: i for i, c in enumerate([here] + crowd)}
        yielding = Yielding(frozenset(c for c in at if rng.random() < 0.2),
                            frozenset(c for c in at if rng.random() < 0.3))
        answers = []
        for one_by_one in (0, len(nav.walkable)):
            monkeypatch.setattr(navigation, "AMONG_CELL_BY_CELL", one_by_one)
            answers.append(_Obstacles(at, here, yielding, trial % 2 == 0).among(goals))
        assert answers[0] == answers[1]


def test_lazy_maps_without_blocked_cells_are_cached_and_bounded():
    nav = Navigator(load_layout("house"))
    goal = nav.furniture_goal(0)
    first = nav.lazy_map(goal)
    assert nav.lazy_map(set(goal)) is first and nav.lazy_map(goal, blocked=[0]) is not first
    for pair in itertools.islice(itertools.combinations(range(200), 2), MAX_CACHED_MAPS + 5):
        nav.lazy_map(pair)
    assert len(nav._lazy) == MAX_CACHED_MAPS


def test_an_env_owns_its_navigator_across_its_episodes_only():
    env, twin = HighLevelEnv(layout="house"), HighLevelEnv(layout="house")
    assert env.nav is None  # built at reset, for the episode's layout
    env.reset(seed=0)
    nav = env.nav
    env.reset(seed=1)
    twin.reset(seed=0)
    assert env.nav is nav and nav.layout is env.base.layout
    assert twin.nav is not nav  # never shared between envs (or threads)


def test_distances_are_shortest_walks(two_rooms):
    nav = Navigator(two_rooms)
    w = two_rooms.width
    sofa = next(i for i, f in enumerate(two_rooms.furniture) if f.name == "sofa")
    dist = nav.distance_map(nav.furniture_goal(sofa))
    # From (2, 1) in the kitchen, through the door at (2, 4), to (2, 7) beside the sofa.
    assert dist[2 * w + 1] == 6
    assert dist[0] == INF  # a wall cell


def test_closed_door_on_the_way_is_opened(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3)], doors_open=[False])
    nav = Navigator(two_rooms)
    living = two_rooms.rooms.index("living_room")
    assert nav.step_toward(state, 0, nav.room_goal(living)) == encode(Verb.OPEN, 1)
    state.door_open[0] = True
    assert nav.step_toward(state, 0, nav.room_goal(living)) == encode(Verb.MOVE, 1)


def test_goal_that_can_never_be_reached(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 2)])
    nav = Navigator(two_rooms)
    assert nav.step_toward(state, 0, frozenset({0})) == -1  # a wall cell
    assert nav.walker(0, frozenset({0})).next_action(state) == -1


def test_walker_goes_around_a_teammate(inline_layout, make_state):
    room = inline_layout(["#######", "#kkkkk#", "#kkkkk#", "#kkkkk#", "#######"])
    w = room.width
    nav = Navigator(room)
    # agent 1 (higher index) must pass agent 0, who stands still in its way.
    state = make_state(room, [(2, 2), (2, 1)])
    walker = nav.walker(1, frozenset({2 * w + 4}))
    first = walker.next_action(state)
    assert first in (encode(Verb.MOVE, 0), encode(Verb.MOVE, 2))  # sidestep north/south


def test_a_ranked_maps_walled_in_answers_as_reading_it_and_the_map_reads_the_same_after():
    # RankedMap.walled_in searches from the walker's cell as it grows the map: on
    # random tables of free cells, blocked ones and ranked agents (outranked or not, or
    # stuck: none), it answers as reading the map there, its pocket holds the cell and
    # no goal, walled by cells it may not enter, and the map then reads as one never
    # searched, every cell
    from orgteams.envs.core.navigation import BLOCKED, RANKED, UNREACHED, Pocket, RankedMap

    nav = Navigator(load_layout("generated:32:0"))
    rng = random.Random(6)
    floor = [c for c in range(len(nav.walkable)) if nav.walkable[c]]
    cells = list(range(len(nav.walkable)))
    answers = {"walled": 0, "pocket": 0, "reached": 0}
    for trial in range(1500):
        goals = _goal_sets(nav, rng, trial)
        table = nav._unreached[:]
        for c in rng.sample(floor, rng.randint(50, 600)):
            table[c] = rng.choice([BLOCKED, RANKED - rng.randint(0, 255), UNREACHED])
        here = rng.choice([c for c in floor if c not in goals])
        table[here] = UNREACHED
        outranks = rng.choice([rng.randint(0, 255), INF])
        searched, plain = RankedMap(nav, goals, table[:], outranks), \
            RankedMap(nav, goals, table[:], outranks)
        found = searched.walled_in(here)
        assert (found is not False) == (plain[here] >= INF)
        if isinstance(found, Pocket):
            answers["pocket"] += 1
            assert here in found.cells and found.cells.isdisjoint(goals)
            assert all(plain[c] >= INF for c in found.cells)
            assert all(table[c] == BLOCKED or (table[c] <= RANKED and RANKED - table[c] <= outranks)
                       for c in found.walls)
            assert {n for c in found.cells for n in nav._adjacent[c]} - found.cells \
                == set(found.walls)
        answers["walled" if found else "reached"] += 1
        rng.shuffle(cells)
        assert [searched[c] for c in cells] == [plain[c] for c in cells]
    assert min(answers.values()) > 100


def test_a_ranked_maps_walled_in_within_a_bound_answers_as_reading_it():
    # RankedMap.walled_in(cell, within): True also where the map reads farther than
    # ``within`` there (found without searching all of the cell's part); else as
    # unbounded: on random tables and bounds, near and far walkers, and the map reads
    # as one never searched after
    from orgteams.envs.core.navigation import BLOCKED, RANKED, UNREACHED, RankedMap

    nav = Navigator(load_layout("generated:32:0"))
    rng = random.Random(7)
    floor = [c for c in range(len(nav.walkable)) if nav.walkable[c]]
    cells = list(range(len(nav.walkable)))
    answers = {"beyond": 0, "walled": 0, "reached": 0}
    for trial in range(1500):
        goals = _goal_sets(nav, rng, trial)
        table = nav._unreached[:]
        for c in rng.sample(floor, rng.randint(50, 600)):
            table[c] = rng.choice([BLOCKED, RANKED - rng.randint(0, 255), UNREACHED])
        here = rng.choice([c for c in floor if c not in goals])
        table[here] = UNREACHED
        outranks = rng.choice([rng.randint(0, 255), INF])
        within = rng.randint(0, 40)
        searched, plain = RankedMap(nav, goals, table[:], outranks), \
            RankedMap(nav, goals, table[:], outranks)
        found = searched.walled_in(here, within)
        if found is False:
            answers["reached"] += 1
            assert plain[here] < INF
        else:
            assert plain[here] > within
            answers["beyond" if plain[here] < INF else "walled"] += 1
        rng.shuffle(cells)
        assert [searched[c] for c in cells] == [plain[c] for c in cells]
    assert min(answers.values()) > 100
