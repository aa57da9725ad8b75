"""Crowding on the high-level env: who gives way to whom in narrow places.

Lower agent index has right of way. A waiting agent, or a higher-index one that is
only walking, is pushed one cell aside when a teammate walks into it (a whole queue
along a corridor backs up one cell, :data:`PUSH_DEPTH` deep); an agent boxed into a
dead end is given way to for ``DEFER_TICKS`` instead. Idle agents (unless made idle
with ``obstacle=False``, as a removed team member is) and agents playing primitive
actions are never moved.

A removed member pushed into a corridor, doorway or dead end would be stuck there
for good (nobody can pull it out of a dead end: it only moves when pushed, and only
away from the pusher), sealing whatever lies behind it. So it "evacuates": it walks
to the nearest cell inside a room (:attr:`Navigator.roomy_cells`) with right of way
over waiting and idle teammates, backing any queue of them out of its way, and is idle
again there. A teammate walking somewhere (working) has right of way over it and pushes
it aside like a waiting one: were it the other way round, a worker that pushed an idle
member onto a narrow cell (the only free one, say beside the furniture it goes to) would
be pushed straight back by that member's evacuation, and again, for ever.
:class:`Crowd` holds this state (who defers to whom until when, who evacuates) for one
:class:`~orgteams.envs.highlevel.highlevel_env.HighLevelEnv` (``env.crowd``) and applies
the rules to each tick's joint action, reading the env's runners, navigator and world.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orgteams.envs.core.actions import Verb, encode
from orgteams.envs.core.navigation import (
    BLOCKED,
    INF,
    RANKED,
    UNREACHED,
    Pocket,
    RankedMap,
    Yielding,
)
from orgteams.envs.core.state import is_walkable

if TYPE_CHECKING:
    from array import array

    from orgteams.envs.core.navigation import LazyMap, Navigator, Walker
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

DEFER_TICKS = 12  # how long an agent gives way to one it could not push aside
PUSH_DEPTH = 8  # agents one push may move in a row (a queue in a corridor backs up)


class Crowd:
    """Right of way among one env's agents, used by ``HighLevelEnv.step`` and the plans.

    Args:
        env: The env whose agents it moves aside (its runners, navigator and world).
    """

    def __init__(self, env: HighLevelEnv) -> None:
        self.env = env
        self.defer: dict[str, tuple[str, int]] = {}  # agent -> (gives way to, until tick)
        self.evacuating: dict[str, Walker] = {}  # removed members walking off narrow cells
        self._tick: _TickView | None = None  # while the plans of one tick advance
        # the view of the plans that advanced last, with its world, kept true until the
        # tick's evacuations (before_tick) or the next plans (plans_start) take it, but
        # for the members released since (read again when it is taken)
        self._kept: tuple[object, _TickView | None] | None = None
        self._released: set[str] = set()

    def reset(self) -> None:
        """A new episode: nobody defers or evacuates."""
        self.defer.clear()
        self.evacuating.clear()
        self._kept = None
        self._released.clear()

    def release(self, agent: str) -> None:
        """``agent`` was made idle or active again: it stops any evacuation."""
        self.evacuating.pop(agent, None)
        if self._kept is not None:
            # the kept view reads it again when taken: a round loop makes members idle
            # or active again, many of them, some twice, every round
            self._released.add(agent)

    def _take_kept(self) -> tuple[bool, _TickView | None]:
        """Whether the view the last plans left is of the world now, and that view (None
        where no view gives the same answers), true again for the members released
        since; it is not kept any more."""
        kept, self._kept = self._kept, None
        released = self._released
        if kept is None or kept[0] is not self.env.base.world:
            released.clear()
            return False, None
        view = kept[1]
        if view is not None:
            for agent in released:  # (an order-free update: one agent's cells each)
                if agent in view.rank:
                    view.evacuation(self, agent, False)  # and reads its runner again
        released.clear()
        return True, view

    def before_tick(self, joint: dict[str, int]) -> None:
        """Adjust this tick's ``joint`` actions: evacuations first, then pushes aside."""
        self._evacuate(joint)
        self._make_way(joint)

    def _waiting(self, agent: str) -> bool:
        r = self.env._runners[agent]
        if r.idle:
            return not r.obstacle and agent not in self.evacuating
        return r.status != "running" or r.action.kind == "wait"

    def _walking(self, agent: str) -> bool:
        """Whether ``agent`` runs an action of its own other than waiting (not idle)."""
        r = self.env._runners[agent]
        return not r.idle and r.status == "running" and r.action.kind != "wait"

    def _movable(self, agent: str) -> bool:
        """Whether teammates may push ``agent`` aside: not an idle obstacle, not playing
        primitives."""
        r = self.env._runners[agent]
        if r.idle:
            return not r.obstacle
        return not (r.status == "running" and r.action.kind == "primitive")

    def plans_start(self) -> None:
        """The env's plans are about to advance, one agent after another, on this
        tick's world: :meth:`yielding_cells` answers from a view of the tick kept up to
        date by :meth:`advanced` (positions, deferrals and evacuations do not change
        meanwhile; only the advanced agent's plan does) instead of asking every
        teammate again: 256 walking agents would ask about 65,000 pairs a tick.

        The view the last plans left is taken where the world is still theirs: a step's
        new plans start on the world the last step's plans advanced on, and between
        them only :meth:`release` changes the crowd (and keeps the view true)."""
        taken, view = self._take_kept()
        self._tick = view if taken else _TickView.of(self)

    def advanced(self, agent: str) -> None:
        """``agent``'s plan took its step (it may have ended): keep the view true."""
        if self._tick is not None:
            self._tick.update(self, agent)

    def plans_end(self) -> None:
        """The plans of this tick have advanced: back to asking every teammate (the
        view is kept for this tick's evacuations, :meth:`_evacuate`)."""
        self._kept, self._tick = (self.env.base.world, self._tick), None

    def giving_way(self, agent: str) -> Yielding:
        """Who ``agent`` may walk into now, as its walker asks (:class:`Yielding`): the
        :meth:`yielding_cells`, from the tick's view cell by cell while the plans advance.
        """
        view = self._tick
        if view is not None and view.world is self.env.base.world and agent in view.rank:
            return _ViewYielding(view, agent)
        return Yielding(*self.yielding_cells(agent))

    def yielding_cells(self, agent: str) -> tuple[frozenset[int], frozenset[int]]:
        """Cells of waiting teammates, and of lower-priority (higher index) ones.

        A walking ``agent`` may walk into these: they will be pushed aside (plans use it).
        """
        view = self._tick
        if view is not None and view.world is self.env.base.world and agent in view.rank:
            return view.yielding_cells(agent)
        # _movable, _waiting and _outranks inlined: every walking agent asks this every
        # tick, about every teammate (65,000 pairs a tick at 256 agents).
        env, evacuating, defer = self.env, self.evacuating, self.defer
        world = env.base.world
        pos, tick = world.agent_pos, world.tick
        index, runners = env.base.agent_index, env._runners
        me = index[agent]
        mine = defer.get(agent)
        gives_way_to = mine[0] if mine is not None and mine[1] > tick else None
        i_evacuate = agent in evacuating
        mine_r = runners[agent]
        i_walk = not mine_r.idle and mine_r.status == "running" and mine_r.action.kind != "wait"
        waiting, lower = [], []
        for b in env.agents:
            if b == agent:
                continue
            r = runners[b]
            if r.idle:
                if r.obstacle:
                    continue  # not movable
                waits = b not in evacuating
            elif r.status != "running":
                waits = True
            else:
                kind = r.action.kind
                if kind == "primitive":
                    continue  # not movable
                waits = kind == "wait"
            cell = pos[index[b]]
            if waits:
                waiting.append(cell)
            if i_evacuate and b in evacuating:
                outranks = me < index[b]
            elif i_evacuate:  # not a walking teammate, unless it gives way (_outranks)
                theirs = defer.get(b)
                outranks = waits or (theirs is not None and theirs[0] == agent
                                     and theirs[1] > tick)
            elif b in evacuating:
                outranks = i_walk and gives_way_to != b
            elif gives_way_to == b:
                outranks = False
            else:
                theirs = defer.get(b)
                outranks = (theirs is not None and theirs[0] == agent and theirs[1] > tick) \
                    or me < index[b]
            if outranks:
                lower.append(cell)
        return frozenset(waiting), frozenset(lower)

    def _outranks(self, a: str, b: str) -> bool:
        """Whether ``a`` may push ``b`` aside: lower index wins, unless one defers."""
        index = self.env.base.agent_index
        if a in self.evacuating or b in self.evacuating:
            # evacuating members go before waiting ones, walking (working) ones before
            # them, unless the walker gives way (it found the member boxed in)
            if a in self.evacuating and b in self.evacuating:
                return index[a] < index[b]
            tick = self.env.base.world.tick
            if a in self.evacuating:
                gives = self.defer.get(b)
                return not self._walking(b) or (gives is not None and gives[0] == a
                                                 and gives[1] > tick)
            gives = self.defer.get(a)
            return self._walking(a) and not (gives is not None and gives[0] == b
                                             and gives[1] > tick)
        tick = self.env.base.world.tick
        if self.defer.get(a, ("", -1))[0] == b and self.defer[a][1] > tick:
            return False
        if self.defer.get(b, ("", -1))[0] == a and self.defer[b][1] > tick:
            return True
        return index[a] < index[b]

    def _evacuate(self, joint: dict[str, int]) -> None:
        """Walk removed members (idle, ``obstacle=False``) off narrow cells into a room.

        Sets their action in ``joint``; one that stands inside a room (or has no room to
        go to) stays idle and pushable.
        """
        world = self.env.base.world
        index = self.env.base.agent_index
        roomy = self.env.nav.roomy_cells
        # asked once, a view of the tick answers each evacuating member's question (each
        # would ask every teammate); it follows who starts and stops evacuating here.
        # The plans that just advanced on this world left theirs, kept true as they
        # advanced (nothing else changed since): the same answers, not made again.
        view: _TickView | None
        asked, view = self._take_kept()
        if asked:
            self._tick = view
        try:
            for agent in self.env.agents:
                r = self.env._runners[agent]
                if not (r.idle and not r.obstacle) or not roomy \
                        or world.agent_pos[index[agent]] in roomy:
                    if self.evacuating.pop(agent, None) is not None and view is not None:
                        view.evacuation(self, agent, False)
                    continue
                walker = self.evacuating.get(agent)
                if walker is None:
                    walker = self.evacuating[agent] = self.env.nav.walker(index[agent], roomy)
                    if view is not None:
                        view.evacuation(self, agent, True)
                if not asked:
                    view = self._tick = _TickView.of(self)
                    asked = True
                act = walker.next_action(world, self.giving_way(agent))
                joint[agent] = max(act, 0)
        finally:
            self._tick = None

    def _make_way(self, joint: dict[str, int]) -> None:
        """Push aside whoever stands where a higher-priority agent walks this tick.

        A waiting agent, or one of higher index that is only waiting or walking,
        steps to a free cell beside it (or pushes the next one along, two deep).
        """
        world = self.env.base.world
        index = self.env.base.agent_index
        pos = world.agent_pos
        at = {pos[index[a]]: a for a in self.env.agents}
        taken = set(pos)
        for mover in sorted(joint, key=index.get):
            act = joint[mover]
            if not 1 <= act <= 4:
                continue
            into = pos[index[mover]] + world.scene.deltas[act - 1]
            b = at.get(into)
            here = pos[index[mover]]
            if b is None or not self._pushable(b, mover, joint):
                continue
            own = joint[b]
            if 1 <= own <= 4:  # b steps out of the way itself (into a pocket): let it
                to = into + world.scene.deltas[own - 1]
                if to != here and to not in taken and is_walkable(world, to):
                    taken.add(to)
                    continue
            if self._push(b, here, mover, joint, taken, at, depth=PUSH_DEPTH - 1):
                continue
            # b is boxed in: the mover gives way to b for a while (b may push it back).
            self.defer[mover] = (b, world.tick + DEFER_TICKS)
            if self._waiting(b):
                # b is in a dead end: the mover steps aside and b comes out behind it.
                side = [(d, n) for d, n in self.env.nav.neighbours[here]
                        if n != into and n not in taken and is_walkable(world, n)]
                if side:
                    d, n = side[0]
                    joint[mover] = encode(Verb.MOVE, d)
                    joint[b] = encode(Verb.MOVE, self.env.nav.direction_to(into, here))
                    taken.add(n)

    def _pushable(self, b: str, mover: str, joint: dict[str, int]) -> bool:
        # An idle obstacle never moves, nor is an agent playing primitive actions moved
        # against its choice; an idle non-obstacle (a removed member) is pushed like a
        # waiting agent.
        return joint[b] <= 4 and self._movable(b) and (
            self._waiting(b) or self._outranks(mover, b))

    def _push(self, b: str, away: int, mover: str, joint: dict[str, int], taken: set[int],
              at: dict[int, str], depth: int) -> bool:
        world = self.env.base.world
        cell = world.agent_pos[self.env.base.agent_index[b]]
        ahead = 2 * cell - away
        options = [(d, n) for d, n in self.env.nav.neighbours[cell]
                   if n != away and is_walkable(world, n)]
        if self._waiting(b):  # it may stand there a while: in a room, not a doorway
            roomy = self.env.nav.roomy_cells  # or corridor, if it can
            options.sort(key=lambda dn: (not self.env.nav.is_floor[dn[1]], dn[1] not in roomy,
                                         dn[1] == ahead))
        else:  # walking: into a side pocket (a doorway too) rather than ahead of the
            # mover, which in a corridor would push it back all the way down
            options.sort(key=lambda dn: (dn[1] == ahead, not self.env.nav.is_floor[dn[1]]))
        for d, n in options:
            if n not in taken:
                joint[b] = encode(Verb.MOVE, d)
                taken.add(n)
                return True
        if depth > 0:
            for d, n in options:
                c = at.get(n)
                if c is not None and c != mover and self._pushable(c, mover, joint) \
                        and self._push(c, cell, mover, joint, taken, at, depth - 1):
                    joint[b] = encode(Verb.MOVE, d)
                    return True
        return False


class _TickView:
    """Who may be walked into during one tick's plans, kept per agent (see
    :meth:`Crowd.plans_start`): each agent's cell, whether it may be pushed and whether
    it waits, the cells of the waiting ones, the pushable ones' cells in index order,
    the deferrals in force and the removed members evacuating (they neither wait nor
    rank by index: a walking agent that does not give way to one outranks it). The
    same answers as asking every teammate."""

    def __init__(self, crowd: Crowd, world) -> None:
        env = crowd.env
        self.world = world
        self._runners = env._runners
        index = env.base.agent_index
        self.agents = sorted(env.agents, key=index.__getitem__)
        self.rank = {a: i for i, a in enumerate(self.agents)}
        self.cell = {a: world.agent_pos[index[a]] for a in self.agents}
        self.at = {c: a for a, c in self.cell.items()}  # of() saw one agent a cell
        # the cells of them all, as a set: a set operation with a walker's goals looks
        # at whichever has fewer cells (with the dict, at every agent's)
        self.occupied = frozenset(self.at)
        self.by_rank = [-1] * len(self.agents)  # a pushable agent's cell, else -1
        self.waiting: set[int] = set()  # cells of pushable agents that wait
        tick = world.tick
        self.gives_way = {a: b for a, (b, until) in crowd.defer.items() if until > tick}
        self.given_way: dict[str, list[str]] = {}  # agent -> those giving way to it
        for a, b in self.gives_way.items():
            self.given_way.setdefault(b, []).append(a)
        # evacuating members (idle: their runners do not change while the plans advance)
        self.evacuating = {a: self.cell[a] for a in self.agents if a in crowd.evacuating}
        self._ranked: array | None = None  # the detours' table (ranked()), when first asked
        self._pockets: dict[int, Pocket] = {}  # cell -> the last pocket found there (detour)
        self._nav = env.nav
        # update() of every agent, in one loop (a view is made two or three times a tick
        # for 256 agents); from empty tables, one agent a cell: nothing to take back
        runners, evacuating, by_rank, wait = self._runners, self.evacuating, self.by_rank, \
            self.waiting.add
        for rank, (a, cell) in enumerate(self.cell.items()):
            if a in evacuating:
                continue  # ranked apart (yielding_cells), never waiting
            r = runners[a]
            if r.idle:
                if r.obstacle:
                    continue
                waits = True
            elif r.status != "running":
                waits = True
            else:
                kind = r.action.kind
                if kind == "primitive":
                    continue
                waits = kind == "wait"
            by_rank[rank] = cell
            if waits:
                wait(cell)

    @classmethod
    def of(cls, crowd: Crowd) -> _TickView | None:
        """The view of this tick, or None where it would not give the same answers:
        two agents on one cell."""
        world = crowd.env.base.world
        if len(set(world.agent_pos)) != len(world.agent_pos):
            return None
        return cls(crowd, world)

    def update(self, crowd: Crowd, agent: str) -> None:
        """Read ``agent``'s runner again (as :meth:`Crowd._movable` and ``_waiting`` do)."""
        r = self._runners[agent]
        if agent in self.evacuating:
            movable = waits = False  # ranked apart (yielding_cells), never waiting
        elif r.idle:
            movable = waits = not r.obstacle
        elif r.status != "running":
            movable = waits = True
        else:
            movable = r.action.kind != "primitive"
            waits = r.action.kind == "wait"
        cell = self.cell[agent]
        rank = self.rank[agent]
        self.by_rank[rank] = cell if movable else -1
        if movable and waits:
            self.waiting.add(cell)
        else:
            self.waiting.discard(cell)  # one agent a cell: nobody else's
        if self._ranked is not None:
            self._ranked[cell] = UNREACHED if movable and waits \
                else RANKED - rank if movable else BLOCKED

    def ranked(self) -> array:
        """Per cell, who may walk there as :meth:`yielding_cells` says for a walker
        neither evacuating nor deferring, as a :class:`RankedMap` reads it: free cells
        and waiting agents' :data:`UNREACHED`, pushable ones' ``RANKED - rank`` (the
        higher ranks walk into them), the rest (idle obstacles, primitive players,
        evacuating members) :data:`BLOCKED`. Made when a detour first asks, then kept
        true by :meth:`update`."""
        if self._ranked is None:
            ranked = self._ranked = self._nav._unreached[:]
            waiting, by_rank = self.waiting, self.by_rank
            for rank, a in enumerate(self.agents):
                cell = self.cell[a]
                ranked[cell] = UNREACHED if cell in waiting \
                    else RANKED - rank if by_rank[rank] != -1 else BLOCKED
        return self._ranked

    def detour(self, nav: Navigator, agent: str, goals: frozenset[int], lower: bool,
               within: int = INF) -> tuple[LazyMap | None, int] | None:
        """:meth:`_ViewYielding.detour` of ``agent``, on a :class:`RankedMap` (None for
        an evacuating agent: it is ranked apart).

        The :class:`Pocket` each walker is found walled in is kept for the tick: a
        walker standing in one, none of whose goals is there, every wall of which
        blocks it (by its own rank and exceptions, on the map made for it), is walled
        in too, without a search. A crowd's jammed walkers (dozens a tick) stand in a
        few pockets."""
        if agent in self.evacuating or nav is not self._nav:
            return None
        dist = self.ranked()[:]  # this map's own copy, then the walker's exceptions
        mine = self.cell[agent]
        if not lower:  # stuck long: only the waiting step aside
            dist[mine] = UNREACHED
            return self._walled_in(nav, goals, dist, INF, mine, within)
        waiting, cell = self.waiting, self.cell
        gives_way = self.gives_way.get(agent)
        for b in self.given_way.get(agent, ()):  # they give way to it: it outranks them
            if b != gives_way and b in self.rank and self.by_rank[self.rank[b]] != -1:
                dist[cell[b]] = UNREACHED
        if self.evacuating:
            # it outranks evacuating members while it walks, unless it gives way to one
            r = self._runners[agent]
            if not r.idle and r.status == "running" and r.action.kind != "wait":
                for b, c in self.evacuating.items():
                    if b != gives_way:
                        dist[c] = UNREACHED
        if gives_way in cell and cell[gives_way] not in waiting:
            dist[cell[gives_way]] = BLOCKED  # it gives way to that one: not outranked
        dist[mine] = UNREACHED
        return self._walled_in(nav, goals, dist, self.rank[agent], mine, within)

    def _walled_in(self, nav: Navigator, goals: frozenset[int], dist: array, outranks: int,
                   here: int, within: int) -> tuple[RankedMap | None, int]:
        """:meth:`detour`'s answer for the walker at ``here``, on its copy of the table
        (``dist``, ``outranks``: :class:`RankedMap`'s), the map made only if needed
        (and ``(None, INF)`` where it may be longer than ``within``)."""
        pocket = self._pockets.get(here)
        if pocket is not None and pocket.cells.isdisjoint(goals):
            for c in pocket.walls:
                v = dist[c]
                if not (v == BLOCKED or (v <= RANKED and RANKED - v <= outranks)):
                    break  # it may walk out there
            else:
                return None, INF
        detour = RankedMap(nav, goals, dist, outranks, self.occupied)  # marked: agents
        found = detour.walled_in(here, within)
        if found is False:
            return detour, detour[here]
        if found is not True:
            pockets = self._pockets
            for c in found.cells:
                pockets[c] = found
        return None, INF

    def evacuation(self, crowd: Crowd, agent: str, started: bool) -> None:
        """``agent`` started (or stopped) evacuating (:meth:`Crowd._evacuate`)."""
        if started:
            self.evacuating[agent] = self.cell[agent]
        else:
            self.evacuating.pop(agent, None)
        self.update(crowd, agent)

    def yielding_cells(self, agent: str) -> tuple[frozenset[int], frozenset[int]]:
        """:meth:`Crowd.yielding_cells` for ``agent``."""
        mine = self.cell[agent]
        waiting = frozenset(self.waiting)
        if mine in waiting:
            waiting = waiting - {mine}
        if agent in self.evacuating:
            # an evacuating member outranks waiting teammates, those that give way to
            # it and evacuating ones of higher index (its deferral does not count)
            lower = set(waiting)
            me = self.rank[agent]
            lower.update(c for b, c in self.evacuating.items() if self.rank[b] > me)
            for b in self.given_way.get(agent, ()):
                if b != agent and b in self.rank and self.by_rank[self.rank[b]] != -1:
                    lower.add(self.cell[b])
            return waiting, frozenset(lower)
        lower = set(self.by_rank[self.rank[agent] + 1:])  # lower priority: higher index
        lower.discard(-1)
        gives_way = self.gives_way.get(agent)
        for b in self.given_way.get(agent, ()):  # they give way to it: it outranks them
            if b != gives_way and b != agent and b in self.rank \
                    and self.by_rank[self.rank[b]] != -1:
                lower.add(self.cell[b])
        if self.evacuating:
            # it outranks evacuating members while it walks, unless it gives way to one
            r = self._runners[agent]
            if not r.idle and r.status == "running" and r.action.kind != "wait":
                lower.update(c for b, c in self.evacuating.items() if b != gives_way)
        if gives_way in self.cell:  # it gives way to that one: it does not outrank it
            lower.discard(self.cell[gives_way])
        return waiting, frozenset(lower)


class _ViewYielding(Yielding):
    """:meth:`_TickView.yielding_cells` of one agent, asked cell by cell as its walker
    reads a few cells (not the sets of all 256 teammates' cells built for each of them):
    the same answers, by the same rules."""

    __slots__ = ("_agent", "_evacuates", "_given_way", "_gives_way", "_mine", "_rank", "_view",
                 "_walks")

    def __init__(self, view: _TickView, agent: str) -> None:
        self._view, self._agent = view, agent
        self._mine, self._rank = view.cell[agent], view.rank[agent]
        self._evacuates = agent in view.evacuating
        self._gives_way = view.gives_way.get(agent)
        self._given_way = view.given_way.get(agent, ())
        r = view._runners[agent]
        self._walks = not r.idle and r.status == "running" and r.action.kind != "wait"

    def gives_way(self, cell: int, lower: bool) -> bool:
        view = self._view
        if cell == self._mine:
            return False
        if cell in view.waiting:
            return True
        b = view.at.get(cell) if lower else None
        if b is None:
            return False
        rank = view.rank[b]
        movable = view.by_rank[rank] != -1  # pushable, not evacuating
        if self._evacuates:
            # it outranks evacuating members of higher index and those giving way to it
            return (b in view.evacuating and rank > self._rank) \
                or (movable and b in self._given_way)
        if b == self._gives_way:  # it gives way to that one: it does not outrank it
            return False
        # pushable ones of higher index or giving way to it; evacuating ones while it walks
        return (movable and (rank > self._rank or b in self._given_way)) \
            or (self._walks and b in view.evacuating)

    def cells(self, lower: bool) -> frozenset[int]:
        waiting, outranked = self._view.yielding_cells(self._agent)
        return waiting | outranked if lower else waiting

    def detour(self, nav: Navigator, goals: frozenset[int], lower: bool, within: int = INF
               ) -> tuple[LazyMap | None, int] | None:
        return self._view.detour(nav, self._agent, goals, lower, within)
