"""Navigation: distance maps cached per layout, doors, detours, impossible goals."""

from __future__ import annotations

from orgteams.envs.core.actions import Verb, encode
from orgteams.envs.core.layout import load_layout
from orgteams.envs.core.navigation import INF, navigator


def test_one_navigator_per_layout_and_maps_are_cached():
    nav = navigator(load_layout("house"))
    assert navigator(load_layout("house")) is nav  # a fresh load shares the cache
    goal = nav.furniture_goal(0)
    calls = nav.bfs_calls
    first = nav.distance_map(goal)
    again = nav.distance_map(set(goal))
    assert again is first
    assert nav.bfs_calls <= calls + 1


def test_distances_are_shortest_walks(two_rooms):
    nav = navigator(two_rooms)
    w = two_rooms.width
    sofa = next(i for i, f in enumerate(two_rooms.furniture) if f.name == "sofa")
    dist = nav.distance_map(nav.furniture_goal(sofa))
    # From (2, 1) in the kitchen, through the door at (2, 4), to (2, 7) beside the sofa.
    assert dist[2 * w + 1] == 6
    assert dist[0] == INF  # a wall cell


def test_closed_door_on_the_way_is_opened(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3)], doors_open=[False])
    nav = navigator(two_rooms)
    living = two_rooms.rooms.index("living_room")
    assert nav.step_toward(state, 0, nav.room_goal(living)) == encode(Verb.OPEN, 1)
    state.door_open[0] = True
    assert nav.step_toward(state, 0, nav.room_goal(living)) == encode(Verb.MOVE, 1)


def test_goal_that_can_never_be_reached(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 2)])
    nav = navigator(two_rooms)
    assert nav.step_toward(state, 0, frozenset({0})) == -1  # a wall cell
    assert nav.walker(0, frozenset({0})).next_action(state) == -1


def test_walker_goes_around_a_teammate(inline_layout, make_state):
    room = inline_layout(["#######", "#kkkkk#", "#kkkkk#", "#kkkkk#", "#######"])
    w = room.width
    nav = navigator(room)
    # agent 1 (higher index) must pass agent 0, who stands still in its way.
    state = make_state(room, [(2, 2), (2, 1)])
    walker = nav.walker(1, frozenset({2 * w + 4}))
    first = walker.next_action(state)
    assert first in (encode(Verb.MOVE, 0), encode(Verb.MOVE, 2))  # sidestep north/south
