"""The leader's side of :class:`~orgteams.agents.planner.planner.PlannerAgent`: who does what.

Under ``rules.assign_work: leader`` every leader that has reports (``rules.assigns``:
a pyramid's top leader and its vice leaders, each of two leaders), each round before it
decides for itself, gives each of its own reports that it can reach and that must
decide now one order (:func:`lead`); orders never go to another tier's or another
leader's people:

1. a teammate with a free hand: ``grab`` the nearest known object, carried by nobody,
   that the goal still needs once everything held, claimed and already ordered is
   counted (so no class is ordered more units than the goal needs);
2. else, with empty hands: ``explore`` the nearest room that neither the leader nor a
   teammate has explored (teammates report explored rooms as ``done`` with a ``room``)
   and nobody else claimed or was sent to;
3. else no order: a teammate carrying goal objects delivers them (or looks for their
   target) itself, as it would without a leader.

What the leader has ordered (``assigned``) lapses when it no longer holds
(:func:`free_stale`): the object was placed or someone else claimed it, the ordered
teammate must decide again (its order ended) or did not take the order up (no claim a
round later), the room was explored.

Leaders of one tier under the same boss (``rules.peers``: the two leaders of a dual
leader) coordinate by messages, never by orders: each tells the others, as a claim
``for`` the ordered report, what it gave whom, and relays its reports' ``found`` and
``done`` (``by`` the reporter), so the halves neither duplicate work nor miss what the
other half found.

The leader reads teammates' positions and what they carry from the world, as a leader
watching its team would; what they know reaches it only through their reports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orgteams.agents.planner.planner import PlannerAgent
    from orgteams.agents.view import MemberView

__all__ = ["free_stale", "lead", "needed_for", "room_explored"]

ROOM = "room:"  # prefix of a room's key in ``assigned``


def _held(env: MemberView, agent: str) -> tuple[str, ...]:
    """What ``agent`` carries, as anyone watching it sees."""
    world = env.world
    return tuple(world.scene.objects[o] for o in world.hands[env.agent_index[agent]])


def room_explored(planner: PlannerAgent, env: MemberView, room: str) -> bool:
    """``planner`` explored ``room`` itself or heard that a teammate did."""
    return room in planner.explored or env.memory(planner.agent_id).room_explored(room)


def free_stale(planner: PlannerAgent, env: MemberView) -> dict[str, str]:
    """Drop orders that no longer hold (see the module docstring), so that nothing stays
    "taken" by an order nobody is carrying out. Returns agent -> room of the explore
    orders that ended because their agent must decide again."""
    tick = env.world.tick
    ended = {}
    for key, agent in list(planner.assigned.items()):
        given = planner.assigned_at.get(key, tick)
        if key.startswith(ROOM):
            room = key[len(ROOM):]
            if env.needs_decision(agent):
                ended[agent] = room
            stale = (room_explored(planner, env, room) or env.needs_decision(agent)
                     or (given < tick and planner.room_claims.get(agent) != room))
        else:
            owner = planner.claims.get(key, (agent,))[0]
            stale = (key in planner._placed or owner != agent
                     or (env.needs_decision(agent) and key not in _held(env, agent))
                     or (given < tick and key not in planner.claims))
        if stale:
            del planner.assigned[key]
            planner.assigned_at.pop(key, None)
    return ended


def needed_for(planner: PlannerAgent, env: MemberView, agent: str) -> dict[str, int]:
    """Units of each goal class still needed if ``agent`` is given a new order: the
    goal minus what the leader holds, what anyone claims (``agent`` only what it holds:
    its other claims end with its order) and what others were ordered to grab."""
    need = dict(planner._goal_need(env))  # the team's, copied
    mine = set(_held(env, agent))
    counted = set(env.memory(planner.agent_id).held)
    counted |= {o for o, (who, _) in planner.claims.items()
                if o not in planner._placed and (who != agent or o in mine)}
    counted |= {o for o, who in planner.assigned.items()
                if not o.startswith(ROOM) and who != agent}
    for obj in counted:
        cls = obj.rpartition("_")[0]
        if cls in need:
            need[cls] -= 1
    return need


def _carried(env: MemberView) -> set[str]:
    """Every object some agent carries, read from the world in one pass."""
    world, index = env.world, env.agent_index
    hands, names = world.hands, world.scene.objects
    return {names[o] for a in env.agents for o in hands[index[a]]}


def _grab_order(planner: PlannerAgent, env: MemberView, agent: str,
                carried: set[str]) -> str | None:
    """The nearest object the goal needs that nobody carries (``carried``), claimed or
    was ordered."""
    mem = env.memory(planner.agent_id)
    need = needed_for(planner, env, agent)
    cands = [o for o, b in mem.objects.items()
             if b.kind == "furniture" and o not in carried
             and need.get(o.rpartition("_")[0], 0) > 0
             and o not in planner._placed and not planner._on_target(env, o)
             and planner.claims.get(o, (agent,))[0] == agent
             and planner.assigned.get(o, agent) == agent
             and all(t != o for a, t in planner.intents.items() if a != agent)]
    if not cands:
        return None
    return min(cands, key=lambda o: (planner._dist(env, agent, mem.objects[o].location), o))


def _room_order(planner: PlannerAgent, env: MemberView, agent: str, ended: str | None,
                claimed: Counter[str], explored: Container[str]) -> str | None:
    """The nearest room nobody explored, claimed or was sent to, other than ``ended``:
    the room whose exploration ``agent`` just ended (explored, or it failed: its report
    says which a round later, after the leader has spoken). ``claimed``: how many
    teammates claim each room; ``explored``: the rooms :func:`room_explored` holds
    explored (the leader's, asked once for all its orders of a round)."""
    mem = env.memory(planner.agent_id)
    taken = {k[len(ROOM):] for k, who in planner.assigned.items()
             if k.startswith(ROOM) and who != agent}
    # rooms someone other than ``agent`` claims: read from the counts, not from each of
    # a 256-agent team's claims once per order
    own = planner.room_claims.get(agent)
    taken.update(r for r, n in claimed.items() if n > (r == own))
    rooms = [r for r in mem.rooms if r not in taken and r != ended and r not in explored]
    if not rooms:
        return None
    return planner._nearest_room(env, agent, rooms)


def lead(planner: PlannerAgent, env: MemberView, reach: list[str] | None = None) -> None:
    """Order each reachable teammate that must decide now (module docstring)."""
    ended = free_stale(planner, env)
    tick = env.world.tick
    mem = env.memory(planner.agent_id)
    reachable = None if reach is None else set(reach)  # up to 255 names at 256 agents
    team = [a for a in env.agents if a != planner.agent_id and env.needs_decision(a)
            and (reachable is None or a in reachable)]
    carried = _carried(env)  # hands change only when the env steps: once for all orders
    # nor do room claims or what is explored while it orders (only ``assigned`` grows)
    claimed = Counter(planner.room_claims.values())
    explored = planner.explored | planner._explored_rooms(mem)
    for agent in team:
        held = _held(env, agent)
        obj = _grab_order(planner, env, agent, carried) if len(held) < 2 else None
        if obj is not None:
            planner.assigned[obj] = agent
            planner.assigned_at[obj] = tick
            b = mem.objects[obj]
            planner._say("assign", (agent,), agent=agent, action=f"grab:{obj}",
                         target=planner._target_of(env, obj), location=b.location, tick=b.tick)
            _tell_peers(planner, object=obj, target=planner._target_of(env, obj), tick=tick,
                        **{"for": agent})
            continue
        room = None if held else _room_order(planner, env, agent, ended.get(agent), claimed,
                                             explored)
        if room is not None:
            planner.assigned[ROOM + room] = agent
            planner.assigned_at[ROOM + room] = tick
            planner._say("assign", (agent,), agent=agent, action=f"explore:{room}")
            _tell_peers(planner, room=room, **{"for": agent})


def _tell_peers(planner: PlannerAgent, **claim: object) -> None:
    """Tell the other leaders of its tier (``rules.peers``) what it gave whom, as a
    claim on the order's behalf (``for``: the ordered report): leaders coordinate by
    messages, never by orders, so two halves do not go for one object or room."""
    if planner.rules.peers:
        planner._say("claim", planner.rules.peers, **claim)
