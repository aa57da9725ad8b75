"""Pure dynamics on tiny inline layouts and hand-made states.

The layout of most tests (``two_rooms`` in conftest)::

       0123456789
    0  ##########
    1  #Fkk#llll#      F fridge (container), T kitchen table, S sofa (surfaces)
    2  #kkk+lllS#      + a closed door between kitchen and living room
    3  #kkT#llll#
    4  ##########
"""

from __future__ import annotations

import copy
import re

import pytest

from orgteams.envs.core.actions import ACTIONS, NUM_ACTIONS, Verb, decode, encode
from orgteams.envs.core.dynamics import EVENT_TYPES, Event, transition
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.core.tasks import Predicate

N, E, S, W = range(4)
WAIT = 0


def move(d):
    return encode(Verb.MOVE, d)


def open_(d):
    return encode(Verb.OPEN, d)


def close(d):
    return encode(Verb.CLOSE, d)


def pick(d, slot=0):
    return encode(Verb.PICK, d, slot)


def put(d, hand=0):
    return encode(Verb.PUT, d, hand)


def cells(state):
    return [state.agent_cell(a) for a in range(len(state.agent_pos))]


def types(events):
    return [e.type for e in events]


def names(state, objs):
    return [state.scene.objects[o] for o in objs]


def furn(state, name):
    return [f.name for f in state.scene.layout.furniture].index(name)


# ---- actions table ----

def test_action_table_round_trips():
    assert NUM_ACTIONS == 53 == len(ACTIONS)
    for action_id, action in enumerate(ACTIONS):
        assert encode(*action) == action_id
        assert decode(action_id) == action
    assert str(decode(put(E, 1))) == "put(hand 1 -> east)"
    assert str(decode(pick(W, 7))) == "pick(west, slot 7)"
    assert str(decode(move(N))) == "move(north)"
    assert str(decode(0)) == "wait"


def test_action_encoding_errors():
    with pytest.raises(ValueError, match=re.escape(
            "action 53 is outside the action space Discrete(53); "
            "see orgteams.envs.core.actions for the table")):
        decode(53)
    with pytest.raises(ValueError, match=re.escape("action -1 is outside")):
        decode(-1)
    with pytest.raises(ValueError, match=re.escape(
            "direction must be 0..3 (north, east, south, west), got 4")):
        encode(Verb.MOVE, 4)
    with pytest.raises(ValueError, match=re.escape("put index must be 0..1, got 2")):
        encode(Verb.PUT, 0, 2)


# ---- moving ----

def test_move_and_tick(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 2)])
    new, events = transition(state, [move(E)])
    assert cells(new) == [(2, 3)]
    assert new.tick == 1
    assert events == []
    new, events = transition(new, [WAIT])
    assert cells(new) == [(2, 3)] and new.tick == 2 and events == []


@pytest.mark.parametrize("start, direction", [((1, 2), N),  # wall
                                              ((1, 2), W),  # fridge
                                              ((2, 3), E)])  # closed door
def test_walls_furniture_and_closed_doors_block(two_rooms, make_state, start, direction):
    state = make_state(two_rooms, [start])
    new, events = transition(state, [move(direction)])
    assert cells(new) == [start]
    assert events == [Event("invalid_action", 0, reason="cannot walk there")]


def test_open_door_then_walk_through(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3)])
    new, events = transition(state, [open_(E)])
    assert new.door_open == [True]
    assert events == [Event("opened", 0, door=0)]
    new, _ = transition(new, [move(E)])
    new, _ = transition(new, [move(E)])
    assert cells(new) == [(2, 5)]
    new, events = transition(new, [close(W)])
    assert new.door_open == [False] and events == [Event("closed", 0, door=0)]
    new, events = transition(new, [close(W)])
    assert events == [Event("invalid_action", 0, door=0, reason="door already closed")]


def test_open_an_open_door_is_invalid(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3)], doors_open=[True])
    _, events = transition(state, [open_(E)])
    assert events == [Event("invalid_action", 0, door=0, reason="door already open")]


def test_cannot_close_a_door_someone_stands_in(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3), (2, 4)], doors_open=[True])
    new, events = transition(state, [close(E), WAIT])
    assert new.door_open == [True]
    assert events == [Event("invalid_action", 0, door=0,
                            reason="someone is standing in the doorway")]


def test_door_closed_this_tick_blocks_a_move_into_it(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3), (2, 5)], doors_open=[True])
    new, events = transition(state, [close(E), move(W)])
    assert new.door_open == [False]
    assert cells(new) == [(2, 3), (2, 5)]
    assert types(events) == ["closed", "invalid_action"]


# ---- containers ----

def test_open_and_close_a_container(two_rooms, make_state):
    state = make_state(two_rooms, [(1, 2)])
    new, events = transition(state, [open_(W)])
    assert new.container_open[furn(new, "fridge")] is True
    assert events == [Event("opened", 0, furniture=0)]
    _, events = transition(new, [open_(W)])
    assert events == [Event("invalid_action", 0, furniture=0, reason="container already open")]
    new, events = transition(new, [close(W)])
    assert new.container_open[0] is False
    assert events == [Event("closed", 0, furniture=0)]


def test_surfaces_and_floor_cannot_be_opened(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3)])
    table = furn(state, "kitchen_table")
    _, events = transition(state, [open_(S)])
    assert events == [Event("invalid_action", 0, furniture=table,
                            reason="nothing to open or close there")]
    _, events = transition(state, [close(W)])
    assert events == [Event("invalid_action", 0, reason="nothing to open or close there")]


def test_pick_from_a_closed_container_is_invalid(two_rooms, make_state, where_is):
    state = make_state(two_rooms, [(1, 2)], contents={"fridge": ["apple_1"]})
    new, events = transition(state, [pick(W)])
    assert events == [Event("invalid_action", 0, furniture=0, reason="the container is closed")]
    assert where_is(new, "apple_1") == ("furniture", "fridge")
    _, events = transition(state, [put(W)])
    assert types(events) == ["invalid_action"]
    new, _ = transition(state, [open_(W)])
    new, events = transition(new, [pick(W)])
    assert events == [Event("picked", 0, obj=0, furniture=0)]
    assert where_is(new, "apple_1") == ("agent", "0")


def test_pick_and_put_address_slots(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3)],
                       contents={"kitchen_table": ["apple_1", "cup_1", "fork_1"]})
    table = furn(state, "kitchen_table")
    new, events = transition(state, [pick(S, 1)])
    assert names(new, new.hands[0]) == ["cup_1"]
    assert names(new, new.contents[table]) == ["apple_1", "fork_1"]
    assert events == [Event("picked", 0, obj=1, furniture=table)]
    new, _ = transition(new, [pick(S, 0)])
    assert names(new, new.hands[0]) == ["cup_1", "apple_1"]
    # Both hands full: a third pick is refused.
    full, events = transition(new, [pick(S, 0)])
    assert events == [Event("invalid_action", 0, furniture=table, reason="both hands are full")]
    assert full.hands == new.hands and full.contents == new.contents
    # Put hand slot 1 (the apple): it goes to the end of the table's list.
    new, events = transition(new, [put(S, 1)])
    assert names(new, new.hands[0]) == ["cup_1"]
    assert names(new, new.contents[table]) == ["fork_1", "apple_1"]
    assert events == [Event("placed", 0, obj=0, furniture=table)]
    _, events = transition(new, [put(S, 1)])
    assert events == [Event("invalid_action", 0, furniture=table, reason="hand slot 1 is empty")]
    _, events = transition(new, [pick(S, 5)])
    assert events == [Event("invalid_action", 0, furniture=table, reason="no object in slot 5")]
    _, events = transition(new, [pick(N)])
    assert events == [Event("invalid_action", 0, reason="no furniture there")]
    _, events = transition(new, [put(E)])  # the door
    assert events == [Event("invalid_action", 0, door=0, reason="no furniture there")]


def test_container_capacity(two_rooms, make_state):
    inside = [f"apple_{i}" for i in range(1, 9)]  # the fridge holds 8
    state = make_state(two_rooms, [(1, 2)], contents={"fridge": inside},
                       hands=[["cup_1"]], opened=["fridge"])
    new, events = transition(state, [put(W)])
    assert events == [Event("invalid_action", 0, furniture=0, reason="no room left there")]
    assert names(new, new.hands[0]) == ["cup_1"]
    assert len(new.contents[0]) == 8


def test_lower_index_wins_the_same_object(two_rooms, make_state):
    state = make_state(two_rooms, [(3, 2), (2, 3)], contents={"kitchen_table": ["apple_1"]})
    table = furn(state, "kitchen_table")
    new, events = transition(state, [pick(E), pick(S)])
    assert names(new, new.hands[0]) == ["apple_1"] and new.hands[1] == ()
    assert events == [Event("picked", 0, obj=0, furniture=table),
                      Event("invalid_action", 1, furniture=table, reason="no object in slot 0")]
    # Swap the agents' roles: again the lower index gets it.
    new, _ = transition(state, [WAIT, pick(S)])
    assert names(new, new.hands[1]) == ["apple_1"]


# ---- simultaneous moves ----

def test_two_agents_into_one_cell_lower_index_wins(two_rooms, make_state):
    state = make_state(two_rooms, [(1, 2), (2, 1)])
    new, events = transition(state, [move(S), move(E)])
    assert cells(new) == [(2, 2), (2, 1)]
    assert events == [Event("collision", 1, other=0, reason="same target cell")]
    state = make_state(two_rooms, [(2, 1), (1, 2)])
    new, events = transition(state, [move(E), move(S)])
    assert cells(new) == [(2, 2), (1, 2)]
    assert events == [Event("collision", 1, other=0, reason="same target cell")]


def test_swap_is_refused(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 2), (2, 3)])
    new, events = transition(state, [move(E), move(W)])
    assert cells(new) == [(2, 2), (2, 3)]
    assert sorted((e.type, e.agent, e.other) for e in events) == [("collision", 0, 1),
                                                                  ("collision", 1, 0)]


def test_moving_into_a_standing_agent_is_a_collision(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 2), (2, 3)])
    new, events = transition(state, [move(E), WAIT])
    assert cells(new) == [(2, 2), (2, 3)]
    assert events == [Event("collision", 0, other=1, reason="cell occupied")]


def test_rotation_is_allowed(two_rooms, make_state):
    square = [(1, 2), (1, 3), (2, 3), (2, 2)]
    state = make_state(two_rooms, square)
    new, events = transition(state, [move(E), move(S), move(W), move(N)])
    assert cells(new) == square[1:] + square[:1]
    assert events == []


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_follow_the_leader(two_rooms, make_state, order):
    line = [(2, 1), (2, 2), (2, 3)]  # a queue heading east, the leader at (2, 3)
    starts = [line[i] for i in order]
    moves = [move(E)] * 3
    state = make_state(two_rooms, starts, doors_open=[True])
    new, events = transition(state, moves)
    assert cells(new) == [(r, c + 1) for r, c in starts]
    assert events == []
    # With the door closed the leader is stopped, and so is everyone behind it.
    state = make_state(two_rooms, starts)
    new, events = transition(state, moves)
    assert cells(new) == starts
    assert sorted(types(events)) == ["collision", "collision", "invalid_action"]


# ---- goal progress ----

def test_subgoal_done_and_undone(two_rooms, make_state):
    goal = [Predicate("on", "apple", "kitchen_table", 1), Predicate("on", "cup", "sofa", 1)]
    state = make_state(two_rooms, [(2, 3)], hands=[["apple_1"]], goal=goal,
                       contents={"sofa": ["cup_1"]})
    assert state.progress == (0, 1) and not state.success
    table = furn(state, "kitchen_table")
    obj = state.scene.objects.index("apple_1")
    new, events = transition(state, [put(S)])
    assert new.progress == (1, 1) and new.success
    assert events == [Event("placed", 0, obj=obj, furniture=table),
                      Event("subgoal_done", -1, other=0, reason="ON(apple, kitchen_table): 1")]
    again, events = transition(new, [pick(S)])
    assert again.progress == (0, 1) and not again.success
    assert events[-1] == Event("subgoal_undone", -1, other=0,
                               reason="ON(apple, kitchen_table): 1")


def test_progress_is_capped_at_the_count(two_rooms, make_state):
    goal = [Predicate("on", "apple", "kitchen_table", 1)]
    state = make_state(two_rooms, [(2, 3)], hands=[["apple_2"]], goal=goal,
                       contents={"kitchen_table": ["apple_1"]})
    assert state.progress == (1,)
    new, events = transition(state, [put(S)])
    assert new.progress == (1,)
    assert types(events) == ["placed"]


# ---- purity, serialisation, errors ----

def test_transition_is_pure(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3), (1, 2), (3, 2)], hands=[["apple_1"], [], []],
                       contents={"fridge": ["cup_1"], "kitchen_table": ["fork_1"]})
    before = copy.deepcopy(state.to_dict())
    snapshot = HouseholdState.from_dict(before)
    new, _ = transition(state, [put(S), open_(W), pick(E)])
    new, _ = transition(new, [WAIT, WAIT, WAIT])
    assert state.to_dict() == before
    assert state == snapshot
    # The new state shares no mutable list with the old one.
    for attr in ("agent_pos", "hands", "contents", "container_open", "door_open"):
        assert getattr(new, attr) is not getattr(state, attr), attr


def test_same_input_same_output(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3), (2, 2)], contents={"kitchen_table": ["apple_1"]})
    a = transition(state, [pick(S), move(N)])
    b = transition(state, [pick(S), move(N)])
    assert a[0] == b[0] and a[1] == b[1]


def test_state_round_trip(two_rooms, make_state):
    goal = [Predicate("inside", "apple", "fridge", 2)]
    state = make_state(two_rooms, [(2, 3), (1, 2)], hands=[["cup_1"], []], goal=goal,
                       contents={"fridge": ["apple_1"], "sofa": ["apple_2"]},
                       opened=["fridge"], doors_open=[True], tick=5)
    data = state.to_dict()
    assert data["agent_pos"] == [[2, 3], [1, 2]]
    again = HouseholdState.from_dict(data)
    assert again == state
    assert again.to_dict() == data
    assert again.progress == state.progress == (1,)
    assert HouseholdState.from_dict(data, scene=state.scene) == state
    moved, _ = transition(state, [WAIT, move(S)])
    assert moved != state


def test_where(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3)], hands=[["cup_1"]], contents={"sofa": ["apple_1"]})
    assert state.where(0) == ("furniture", furn(state, "sofa"))
    assert state.where(1) == ("agent", 0)
    with pytest.raises(ValueError, match=re.escape("object 2 is nowhere: state is corrupt")):
        state.where(2)


@pytest.mark.parametrize("bad", [NUM_ACTIONS, -1, 100])
def test_action_outside_the_space(two_rooms, make_state, bad):
    state = make_state(two_rooms, [(2, 3), (2, 2)])
    with pytest.raises(ValueError, match=re.escape(
            f"agent 1: action {bad} is outside the action space Discrete(53)")):
        transition(state, [WAIT, bad])


def test_joint_action_length(two_rooms, make_state):
    state = make_state(two_rooms, [(2, 3)])
    with pytest.raises(ValueError, match=re.escape("joint action has 2 entries for 1 agents")):
        transition(state, [WAIT, WAIT])


def test_event_to_dict_drops_unset_fields():
    assert Event("picked", 0, obj=3, furniture=1).to_dict() == {
        "type": "picked", "agent": 0, "obj": 3, "furniture": 1}
    assert set(EVENT_TYPES) >= {"picked", "placed", "opened", "closed", "subgoal_done",
                                "subgoal_undone", "collision", "invalid_action"}
