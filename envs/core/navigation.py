"""Shortest-path navigation on a layout: BFS distance maps cached per navigator.

A :class:`Navigator` is made for one :class:`~orgteams.envs.core.layout.Layout` and
owned by whoever made it: each
:class:`~orgteams.envs.highlevel.highlevel_env.HighLevelEnv` builds its own
(``env.nav``) and keeps it across its episodes on that layout; nothing is shared
process-wide. Its cache is bounded (:data:`MAX_CACHED_MAPS`) and, like the env, not
made for several threads at once (an env is stepped by one thread).

It answers "which primitive action brings this agent one step closer to any of
these goal cells", with doors counted as walkable (a closed door on the path is
opened with the primitive ``open`` action) and other agents treated as moving
obstacles: when the best next cell is occupied the agent takes another cell at
the same distance, else re-plans a detour around the occupied cells, else waits;
after :data:`STUCK_SHUFFLE` blocked ticks it steps aside to break head-on
deadlocks in corridors and doorways.

Distance maps are plain Python lists indexed by flat cell (``row * width + col``),
computed once per goal-cell set and kept in the navigator's LRU dict, so planning
cost per tick is a few list lookups.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Collection, Iterable
from typing import NamedTuple

from orgteams.envs.core.actions import Verb, encode
from orgteams.envs.core.layout import DIRECTIONS, DOOR, FLOOR, Layout
from orgteams.envs.core.state import HouseholdState

INF = 1 << 30
STUCK_SHUFFLE = 3  # blocked ticks before an agent steps aside to break a deadlock
DETOUR_SLACK = 8  # extra cells a detour may cost to be taken without waiting first
MAX_CACHED_MAPS = 512  # distance maps kept per layout (targets are rooms and furniture)
AMONG_CELL_BY_CELL = 48  # obstacles among a walker's goals asked about one by one, up to
WAIT = 0
UNREACHED, BLOCKED = -2, -1  # a LazyMap's cells not reached yet, and never entered
RANKED = -3  # a RankedMap's cell RANKED - r holds an agent of rank r: entered iff outranked


class Navigator:
    """Distance maps and next steps for one layout (its owner keeps it; see the module)."""

    def __init__(self, layout: Layout):
        self.layout = layout
        h, w = layout.height, layout.width
        self.width = w
        tiles = layout.tiles.ravel()
        self.walkable = [bool(t in (FLOOR, DOOR)) for t in tiles]
        self.walkable_cells = frozenset(c for c, w in enumerate(self.walkable) if w)
        self.is_door = [bool(t == DOOR) for t in tiles]
        self.is_floor = [bool(t == FLOOR) for t in tiles]
        self.deltas = tuple(dr * w + dc for dr, dc in DIRECTIONS)
        self.neighbours: list[tuple[tuple[int, int], ...]] = []
        for cell in range(h * w):
            r, c = divmod(cell, w)
            out = []
            for d, (dr, dc) in enumerate(DIRECTIONS):
                rr, cc = r + dr, c + dc
                if 0 <= rr < h and 0 <= cc < w and self.walkable[rr * w + cc]:
                    out.append((d, rr * w + cc))
            self.neighbours.append(tuple(out))
        self._adjacent = tuple(tuple(n for _, n in out) for out in self.neighbours)
        room_map = layout.room_map.ravel()
        self.room_cells = tuple(
            frozenset(i for i in range(h * w) if tiles[i] == FLOOR and room_map[i] == r)
            for r in range(len(layout.rooms)))
        self.furniture_cells = tuple(
            frozenset(n for _, n in self.neighbours[f.cell[0] * w + f.cell[1]]
                      if tiles[n] == FLOOR)
            for f in layout.furniture)
        access = frozenset().union(*self.furniture_cells)
        # Parking cells: inside a room (3+ floor neighbours, so not a corridor, doorway or
        # dead end) and not where anyone stands to reach furniture.
        self.roomy_cells = frozenset(
            c for c in range(h * w) if self.is_floor[c] and c not in access
            and sum(self.is_floor[n] for _, n in self.neighbours[c]) >= 3)
        self._maps: OrderedDict[frozenset[int], list[int]] = OrderedDict()
        self._lazy: OrderedDict[frozenset[int], LazyMap] = OrderedDict()
        self._nearest: OrderedDict[frozenset[int], NearestGoals] = OrderedDict()
        self.bfs_calls = 0  # distance maps computed (cache misses), for benchmarks
        self._at: tuple[HouseholdState, dict[int, int] | None] | None = None  # obstacles
        self._unreached = array("i", [UNREACHED]) * (h * w)  # a fresh LazyMap's, copied

    # ---- distance maps ----
    def distance_map(self, goals: Iterable[int]) -> list[int]:
        """Walking distance from every cell to the nearest goal cell (``INF`` if none)."""
        key = goals if isinstance(goals, frozenset) else frozenset(goals)
        dist = self._maps.get(key)
        if dist is not None:
            self._maps.move_to_end(key)
            return dist
        dist = self._bfs(key, blocked=())
        self._maps[key] = dist
        if len(self._maps) > MAX_CACHED_MAPS:
            self._maps.popitem(last=False)
        return dist

    def nearest_goals(self, goals: frozenset[int]) -> NearestGoals:
        """Per cell, the goal cells nearest to it (:class:`NearestGoals`), kept in an LRU
        dict like the maps."""
        near = self._nearest.get(goals)
        if near is not None:
            self._nearest.move_to_end(goals)
            return near
        near = self._nearest[goals] = NearestGoals(self, goals)
        if len(self._nearest) > MAX_CACHED_MAPS:
            self._nearest.popitem(last=False)
        return near

    def lazy_map(self, goals: Iterable[int], blocked: Iterable[int] = ()) -> LazyMap:
        """:meth:`distance_map` (``blocked``: cells never entered), computed only as far
        as it is read; unblocked ones are kept in an LRU dict like the full maps."""
        if blocked:
            self.bfs_calls += 1
            return LazyMap(self, goals, blocked)
        key = goals if isinstance(goals, frozenset) else frozenset(goals)
        dist = self._lazy.get(key)
        if dist is not None:
            self._lazy.move_to_end(key)
            return dist
        self.bfs_calls += 1
        dist = self._lazy[key] = LazyMap(self, key)
        if len(self._lazy) > MAX_CACHED_MAPS:
            self._lazy.popitem(last=False)
        return dist

    def _bfs(self, goals: frozenset[int], blocked: Iterable[int]) -> list[int]:
        # Breadth first, one distance layer at a time; blocked cells hold -1 while it
        # runs (never entered, no set lookup per step) and INF after. A crowd of 256
        # agents asks for about a hundred maps a tick (goals minus occupied cells, and
        # detours), so this loop is much of a big team's tick.
        self.bfs_calls += 1
        walkable = self.walkable
        dist = [INF] * len(walkable)
        blocked = set(blocked)
        for b in blocked:
            dist[b] = -1
        frontier = [g for g in goals if walkable[g] and g not in blocked]
        for g in frontier:
            dist[g] = 0
        adjacent = self._adjacent
        d = 0
        while frontier:
            d += 1
            layer = []
            grow = layer.append
            for cell in frontier:
                for n in adjacent[cell]:
                    if dist[n] == INF:
                        dist[n] = d
                        grow(n)
            frontier = layer
        for b in blocked:
            dist[b] = INF
        return dist

    def room_goal(self, room: int) -> frozenset[int]:
        """The floor cells of room ``room``, as a goal set for :meth:`distance_map`."""
        return self.room_cells[room]

    def furniture_goal(self, furniture: int) -> frozenset[int]:
        """The floor cells from which an agent can reach a piece of furniture."""
        return self.furniture_cells[furniture]

    def distance(self, cell: int, goals: frozenset[int]) -> int:
        """Walking distance from ``cell`` to the nearest of ``goals`` (from the cached distance
        map).
        """
        return self.distance_map(goals)[cell]

    # ---- one step ----
    def step_toward(self, state: HouseholdState, agent: int, goals: frozenset[int],
                    stuck: int = 0, yielding: frozenset[int] = frozenset()) -> int:
        """The primitive action that moves ``agent`` one step toward ``goals``.

        Returns ``0`` (wait) when the agent is already on a goal cell, when the way is
        blocked by agents and no detour exists, and ``-1`` when no path can ever exist.
        ``stuck`` is how many ticks in a row this agent has been blocked. Cells in
        ``yielding`` hold agents that will step aside (they wait), so the agent walks on.
        """
        here = state.agent_pos[agent]
        if here in goals:
            return WAIT
        occupied = {p for i, p in enumerate(state.agent_pos)
                    if i != agent and p not in yielding}
        free_goals = goals - occupied
        if free_goals and len(free_goals) < len(goals):
            goals = free_goals  # head for a goal cell nobody stands on (cached map too)
        dist = self.distance_map(goals)
        if dist[here] >= INF:
            return -1
        best = [(d, n) for d, n in self.neighbours[here] if dist[n] == dist[here] - 1]
        for d, n in best:
            if n not in occupied:
                return self._enter(state, d, n)
        # Blocked: detour around the agents in the way (computed fresh, not cached).
        detour = self._bfs(goals, blocked=occupied)
        if detour[here] < INF and (detour[here] <= dist[here] + 8 or stuck >= 2):
            for d, n in self.neighbours[here]:
                if detour[n] == detour[here] - 1:
                    return self._enter(state, d, n)
        if stuck >= STUCK_SHUFFLE:
            free = [(d, n) for d, n in self.neighbours[here]
                    if n not in occupied and self.is_floor[n]]
            if free:
                d, n = free[(state.tick + agent) % len(free)]
                return self._enter(state, d, n)
        return WAIT

    def obstacles(self, state: HouseholdState, agent: int, here: int, yielding: Yielding,
                  lower: bool) -> _Obstacles:
        """The agents a :class:`Walker` of ``agent`` (standing on ``here``) walks around:
        every other agent but those that give way to it (``yielding``, the outranked
        ones too where ``lower``), as cell -> agent index.

        Every walker of a tick asks on the same world (256 of them in a crowd): the
        cells of all agents are mapped once per world, and a walker asks about the few
        cells it reads (beside it, its goals) instead of taking its obstacles out of
        that map (for each of 256 walkers, sets of 256 cells). Where two agents share a
        cell, the plain loop decides."""
        cached = self._at
        if cached is None or cached[0] is not state:
            pos = state.agent_pos
            at = {p: i for i, p in enumerate(pos)}
            cached = self._at = (state, at if len(at) == len(pos) else None)
        at = cached[1]
        if at is None:
            cells = yielding.cells(lower)
            return _Obstacles({p: i for i, p in enumerate(state.agent_pos)
                               if i != agent and p not in cells}, here, None, lower)
        return _Obstacles(at, here, yielding, lower)

    def walker(self, agent: int, goals: frozenset[int]) -> Walker:
        """A stateful walk of ``agent`` to ``goals`` (see :class:`Walker`)."""
        return Walker(self, agent, goals)

    def _enter(self, state: HouseholdState, direction: int, cell: int) -> int:
        if self.is_door[cell]:
            door = state.scene.door_at[cell]
            if not state.door_open[door]:
                return encode(Verb.OPEN, direction)
        return encode(Verb.MOVE, direction)

    def direction_to(self, here: int, cell: int) -> int:
        """Direction (0..3) from ``here`` to an adjacent ``cell``; ValueError if not adjacent."""
        for d, delta in enumerate(self.deltas):
            if here + delta == cell:
                return d
        raise ValueError(f"cell {cell} is not next to cell {here}")


class Yielding:
    """Who a walking agent may walk into (they will be pushed aside, so it walks on):
    agents on ``waiting`` cells, and, while it has not been stuck long, the outranked
    (lower priority) ones on ``lower`` cells.

    A :class:`Walker` asks cell by cell (:meth:`gives_way`) about the few cells it
    reads, and for all the cells (:meth:`cells`) only for a detour. This form holds the
    two sets; the crowd's view of a tick answers from its own tables without building
    them (:class:`~orgteams.envs.highlevel.crowding.Crowd` does, for 256 walkers a tick).
    """

    __slots__ = ("lower", "waiting")

    def __init__(self, waiting: frozenset[int] = frozenset(),
                 lower: frozenset[int] = frozenset()) -> None:
        self.waiting, self.lower = waiting, lower

    def gives_way(self, cell: int, lower: bool) -> bool:
        """Whether the agent on ``cell`` steps aside (the outranked ones too if ``lower``)."""
        return cell in self.waiting or (lower and cell in self.lower)

    def cells(self, lower: bool) -> frozenset[int]:
        """The cells of every agent that steps aside (the outranked ones too if ``lower``)."""
        return self.waiting | self.lower if lower else self.waiting

    def detour(self, nav: Navigator, goals: frozenset[int], lower: bool, within: int = INF
               ) -> tuple[LazyMap | None, int] | None:
        """:meth:`_Obstacles.detour`, where this form finds it without the cells of every
        agent that does not step aside; None: it does not (the caller does)."""
        return None


NOBODY = Yielding()  # nobody steps aside: every other agent is walked around


class _Obstacles:
    """:meth:`Navigator.obstacles` as a walker reads it (``n in occupant``,
    ``occupant[n]``, ``occupant.keys()``, :meth:`among`): on the map of every agent's
    cell, asking ``yielding`` about a cell when it is read (``yielding`` None: ``at``
    holds the obstacles only)."""

    __slots__ = ("_at", "_here", "_keys", "_lower", "_yielding")

    def __init__(self, at: dict[int, int], here: int, yielding: Yielding | None,
                 lower: bool) -> None:
        self._at, self._here, self._yielding, self._lower = at, here, yielding, lower
        self._keys: set[int] | None = None

    def __contains__(self, cell: int) -> bool:
        if self._yielding is None:
            return cell in self._at
        return cell in self._at and cell != self._here \
            and not self._yielding.gives_way(cell, self._lower)

    def __getitem__(self, cell: int) -> int:
        if cell not in self:
            raise KeyError(cell)
        return self._at[cell]

    def detour(self, nav: Navigator, goals: frozenset[int], within: int = INF
               ) -> tuple[LazyMap | None, int]:
        """The map of a detour to ``goals`` around these obstacles (the same values as
        ``nav.lazy_map(goals, blocked=self.keys())``) and what it reads where the walker
        stands; ``(None, INF)`` where they wall it off from every goal (no map made), or
        may where it is longer than ``within`` (a detour the walker would not take).
        From the crowd's view of the tick, without the set of the obstacles' cells,
        where it can (:meth:`Yielding.detour`)."""
        if self._yielding is not None:
            found = self._yielding.detour(nav, goals, self._lower, within)
            if found is not None:
                return found
        # A RankedMap with no ranked cells is the LazyMap blocked on the obstacles; its
        # walled_in() searches from the walker where that side is smaller: a removed
        # member evacuating to the roomy cells (a thousand goals) is mostly boxed in,
        # and the map would grow over every cell its goals reach to say so.
        dist = nav._unreached[:]
        blocked = self.keys()
        for b in blocked:
            dist[b] = BLOCKED
        detour = RankedMap(nav, goals, dist, INF, blocked)
        if detour.walled_in(self._here, within) is not False:
            return None, INF
        return detour, detour[self._here]

    def keys(self) -> set[int]:
        """Every obstacle's cell (built when first asked: a detour's blocked cells)."""
        if self._keys is None:
            if self._yielding is None:
                self._keys = set(self._at)
            else:
                self._keys = self._at.keys() - self._yielding.cells(self._lower)
                self._keys.discard(self._here)
        return self._keys

    def among(self, cells: frozenset[int]) -> set[int]:
        """The obstacles' cells among ``cells`` (a walker's goals)."""
        taken = cells & self._at.keys()
        # Cell by cell unless there are many (the roomy cells of a crowd) or all the
        # obstacles' cells are known already: finding those asks about every teammate
        # (256 in a crowd), a few dozen asks cost less.
        if len(taken) > AMONG_CELL_BY_CELL or self._yielding is None \
                or self._keys is not None:
            return taken & self.keys()
        here, gives_way, lower = self._here, self._yielding.gives_way, self._lower
        return {c for c in taken if c != here and not gives_way(c, lower)}


class LazyMap:
    """A distance map (``dist[cell]``, ``INF`` where no goal can be reached) that grows
    one breadth-first layer at a time, only as far as cells are read: a layer's cells
    are final when it is reached, so every value read equals the full map's.

    A walker reads five cells of a map (where it stands and the cells beside it).
    Most maps of a crowded tick serve one walker or a few: goals minus the cells other
    agents stand on, and detours around them; the agents that ask stand near their
    goals, so only a few layers are ever grown. Blocked cells (a detour's: the 255
    others of a crowd) hold :data:`BLOCKED` from the start (read as ``INF``), so growing
    a layer asks nothing but the map itself (a blocked map is made for dozens of walkers a
    tick, and grown over a hundred cells each).
    """

    __slots__ = ("_adjacent", "_d", "_dist", "_frontier")

    def __init__(self, nav: Navigator, goals: Iterable[int], blocked: Iterable[int] = ()):
        walkable = nav.walkable
        # An array of small ints, not a list: a crowded tick makes dozens of these maps
        # of every cell, and the garbage collector traverses each list (not an array)
        # of them, every cell, at each of the several collections a tick it survives.
        self._dist = dist = nav._unreached[:]
        for b in blocked:
            dist[b] = BLOCKED
        self._frontier = [g for g in goals if walkable[g] and dist[g] == UNREACHED]
        for g in self._frontier:
            dist[g] = 0
        self._adjacent = nav._adjacent
        self._d = 0

    def __getitem__(self, cell: int) -> int:
        dist = self._dist
        found = dist[cell]
        if found >= 0:
            return found
        if found == BLOCKED:
            return INF
        adjacent = self._adjacent
        while dist[cell] == UNREACHED and self._frontier:
            self._d += 1
            layer = []
            grow = layer.append
            d = self._d
            for c in self._frontier:
                for n in adjacent[c]:
                    if dist[n] == UNREACHED:
                        dist[n] = d
                        grow(n)
            self._frontier = layer
        found = dist[cell]
        return found if found >= 0 else INF


class Pocket(NamedTuple):
    """A part of the grid walled off by agents: its ``cells``, and the ``walls``, every
    walkable cell beside them but not among them (agents stand there). A walker
    standing in the cells, none of whose goals is there, is walled in where every
    wall blocks it (a way out crosses a wall), whatever the cells inside hold."""

    cells: frozenset[int]
    walls: tuple[int, ...]


class RankedMap(LazyMap):
    """A :class:`LazyMap` blocked where agents of lower rank stand, told apart as the map
    grows: ``dist`` starts as a tick's table of cells (:data:`UNREACHED` where free or an
    agent steps aside, :data:`BLOCKED` where one never does, ``RANKED - r`` where an agent
    of rank ``r`` stands that steps aside for the higher ranks), copied for this map
    with the walker's own exceptions; a ranked cell is entered iff ``r > outranks``.

    The same values as the LazyMap blocked on those cells: a 256-agent crowd makes
    dozens of detour maps a tick, and blocking each one's cells asked after every
    teammate (and wrote each of the ~255 blocked cells into the map)."""

    __slots__ = ("_outranks",)

    def __init__(self, nav: Navigator, goals: Iterable[int], dist: array, outranks: int,
                 marked: Collection[int] | None = None):
        """``dist``: this map's own copy of the table (it is written); ``outranks``: the
        highest rank whose agents block the walker (``INF``: every ranked one);
        ``marked``: the cells where ``dist`` may hold anything but :data:`UNREACHED`
        (more will do; None: every goal is read)."""
        nav.bfs_calls += 1
        walkable = nav.walkable
        self._dist, self._outranks = dist, outranks
        if marked is None:
            look, frontier = goals, []
        else:
            # Only the goals agents stand on are read, the others are free: a walker
            # to a room (or a removed member to any roomy cell) has hundreds of goals
            # and a dozen agents on them. The frontier's order changes no distance.
            free = nav.walkable_cells.intersection(goals)
            look = free.intersection(marked)
            frontier = list(free.difference(look)) if look else list(free)
            for g in frontier:
                dist[g] = 0
        for g in look:
            if walkable[g]:
                v = dist[g]
                if v == UNREACHED or (v <= RANKED and RANKED - v > outranks):
                    dist[g] = 0
                    frontier.append(g)
        self._frontier = frontier
        self._adjacent = nav._adjacent
        self._d = 0

    def __getitem__(self, cell: int) -> int:
        dist = self._dist
        found = dist[cell]
        if found >= 0:
            return found
        if found == BLOCKED:
            return INF
        while dist[cell] <= UNREACHED and self._frontier:
            self._grow()
        found = dist[cell]
        return found if found >= 0 else INF

    def _grow(self) -> None:
        """One more layer of the map: the cells a step beyond its edge that it may enter
        (free, or a teammate this walker outranks) get the next distance; a teammate it
        does not outrank is marked BLOCKED."""
        dist, adjacent, outranks = self._dist, self._adjacent, self._outranks
        self._d += 1
        layer = []
        grow = layer.append
        d = self._d
        for c in self._frontier:
            for n in adjacent[c]:
                v = dist[n]
                if v == UNREACHED or (v <= RANKED and RANKED - v > outranks):
                    dist[n] = d
                    grow(n)
                elif v <= RANKED:
                    dist[n] = BLOCKED
        self._frontier = layer

    def walled_in(self, cell: int, within: int = INF) -> Pocket | bool:
        """Whether ``self[cell]`` is ``INF``: the :class:`Pocket` of ``cell`` (its part
        of the grid, no goal there) where the search from it ended first, else True or
        False; True too where it is more than ``within`` (found so: below). Found by
        growing the map and a search from ``cell``, a layer at a time of whichever has
        the fewer cells at its edge, until the map ends (its goals' part of the grid is
        done) or the search does (``cell``'s part holds no goal: none of its cells is
        reached) or they meet (False). Exact in any order of
        layers: ways are the same both directions, and the goals are reached (0) from
        the start.

        A crowd's blocked walkers are mostly boxed in by teammates (dozens a tick): the
        map of each grew over all its goals could reach; this grows the smaller side.

        ``within``: a walker takes a detour at most that long (it waits or steps aside
        else: dozens a tick, most of them walled in). Once the map holds every cell at
        most ``d`` from the goals and the search every cell at most ``s`` steps from
        ``cell``, with ``d + s >= within``, a way at most ``within`` long has a cell
        both hold (a way ``k <= s`` steps from ``cell`` and ``within - k <= d`` from
        the goals): none among the cells searched, ``self[cell] > within``."""
        dist = self._dist
        if dist[cell] >= 0:
            return False
        if dist[cell] == BLOCKED:
            return True
        adjacent, outranks = self._adjacent, self._outranks
        seen = {cell}
        part = [cell]
        todo = [cell]
        steps = 0  # the search's layers
        while True:
            if not self._frontier:
                return dist[cell] < 0
            if self._d + steps >= within:
                for c in part:
                    if dist[c] >= 0:
                        return False
                return True
            if len(todo) <= len(self._frontier):
                # a layer of the search from the cell, through cells the map may enter
                ahead = []
                for c in todo:
                    for n in adjacent[c]:
                        if n in seen:
                            continue
                        seen.add(n)
                        v = dist[n]
                        if v >= 0:
                            return False
                        if v == UNREACHED or (v <= RANKED and RANKED - v > outranks):
                            ahead.append(n)
                if not ahead:
                    cells = frozenset(part)
                    return Pocket(cells, tuple(seen - cells))
                part += ahead
                todo = ahead
                steps += 1
                continue
            self._grow()  # a layer of the map
            if dist[cell] >= 0:
                return False


class NearestGoals:
    """The goal cells nearest to each cell (``near[cell]``, at the cell's
    :meth:`Navigator.distance_map` distance; None where no goal can be reached),
    found as cells are read: they are the goals at the ends of the ways down the map
    from the cell (each step one cell closer), the union of its downhill neighbours'.

    A walker whose nearest goals are not all taken by agents is as far from the free
    goals as from all of them (:class:`FewerGoals`); it reads a few cells near where it
    stands, so only the ways down from those are followed."""

    __slots__ = ("_adjacent", "_dist", "_down", "_near", "_neighbours", "_second")

    def __init__(self, nav: Navigator, goals: frozenset[int]):
        self._dist = nav.distance_map(goals)
        self._near: list[frozenset[int] | None] = [None] * len(self._dist)
        self._adjacent = nav._adjacent
        self._neighbours = nav.neighbours
        self._down: list[tuple[tuple[int, int], ...] | None] = [None] * len(self._dist)
        self._second: list[frozenset[int] | None] = [None] * len(self._dist)

    def second(self, cell: int) -> frozenset[int] | None:
        """The goal cells one step farther from ``cell`` than its nearest ones (None
        where no goal can be reached), found as cells are read: those a neighbour one
        step closer has one step farther than its nearest, and those nearest to a
        neighbour as far, less ``cell``'s nearest.

        A walker whose nearest goals are all taken (an agent on the cell beyond a
        doorway) is one step farther from the free goals where one of these is free:
        read here, instead of growing the map of the free goals out to it."""
        second = self._second
        found = second[cell]
        if found is not None or self._dist[cell] >= INF:
            return found
        dist, adjacent = self._dist, self._adjacent
        stack = [cell]  # depth first: a cell once the cells below it are known
        while stack:
            c = stack[-1]
            if second[c] is not None:
                stack.pop()
                continue
            d = dist[c]
            down = [n for n in adjacent[c] if dist[n] == d - 1]
            unknown = [n for n in down if second[n] is None]
            if unknown:
                stack += unknown
                continue
            stack.pop()
            ring = set()
            for n in down:
                ring |= second[n]
            for n in adjacent[c]:
                if dist[n] == d:
                    ring |= self[n]
            ring -= self[c]
            second[c] = frozenset(ring)
        return second[cell]

    def downhill(self, cell: int) -> tuple[tuple[int, int], ...]:
        """The ``(direction, neighbour)`` pairs of ``cell`` one step closer to the goals,
        in :attr:`Navigator.neighbours` order (kept: every walker of these goals that
        stands there reads them)."""
        down = self._down[cell]
        if down is None:
            dist = self._dist
            d = dist[cell] - 1
            down = self._down[cell] = tuple((dd, n) for dd, n in self._neighbours[cell]
                                            if dist[n] == d)
        return down

    def __getitem__(self, cell: int) -> frozenset[int] | None:
        near = self._near
        found = near[cell]
        if found is not None or self._dist[cell] >= INF:
            return found
        dist, adjacent = self._dist, self._adjacent
        stack = [cell]  # depth first: a cell once the cells below it are known
        while stack:
            c = stack[-1]
            if near[c] is not None:
                stack.pop()
                continue
            d = dist[c] - 1
            if d < 0:  # a goal
                near[c] = frozenset((c,))
                stack.pop()
                continue
            down = [n for n in adjacent[c] if dist[n] == d]
            unknown = [n for n in down if near[n] is None]
            if unknown:
                stack += unknown
                continue
            stack.pop()
            sets = [near[n] for n in down]
            union = sets[0].union(*sets[1:]) if len(sets) > 1 else sets[0]
            # one frozenset object per distinct set: most cells share a neighbour's
            near[c] = next((x for x in sets if x == union), union)
        return near[cell]


class FewerGoals:
    """The distance map a :class:`Walker` reads this tick: of its goals less the ones
    other agents take (``occupant``, its obstacles), or of all of them when none or all
    are taken, as ``dist[cell]`` (a walker reads five cells: where it stands, beside it).

    A cell is as far from the free goals as from all of them when one of its nearest
    goals (:meth:`Navigator.nearest_goals`) is free: the full map answers, after a look
    at those few goal cells. Only where every nearest goal is taken are the taken goals
    found (:meth:`_Obstacles.among`) and the lazy map of the free ones grown. A crowd of
    256 walkers would otherwise find its taken goals, and make a new set of goals and a
    new lazy map, for most of them every tick (the taken cells move)."""

    __slots__ = ("_all", "_full", "_goals", "_map", "_near", "_nav", "_occupant")

    def __init__(self, nav: Navigator, full: list[int], near: NearestGoals,
                 goals: frozenset[int], occupant: _Obstacles) -> None:
        self._nav, self._full, self._near, self._all = nav, full, near, goals
        self._occupant = occupant
        self._goals: frozenset[int] | None = None  # found when first needed
        self._map: list[int] | LazyMap | None = None

    def __getitem__(self, cell: int) -> int:
        d = self._full[cell]
        if d >= INF:
            return d
        occupant = self._occupant
        for g in self._near[cell]:
            if g not in occupant:
                return d
        dist = self._map
        if dist is None:
            # made when first read, not with goals(): a detour asks for the goals only
            goals = self.goals()
            dist = self._map = self._full if goals is self._all \
                else self._nav.lazy_map(goals)
        return dist[cell]

    def goals(self) -> frozenset[int]:
        """The goals this map is of: all the walker's goals less the taken ones, or all
        of them (the same object) when none or all are taken."""
        if self._goals is None:
            goals = self._all
            taken = self._occupant.among(goals)
            self._goals = goals - taken if taken and len(taken) < len(goals) else goals
        return self._goals


class Walker:
    """One agent walking to a set of goal cells, tick by tick, without oscillating.

    When the shortest way is blocked by an agent that will not step aside, the agent
    with the higher index takes a detour around the agents in the way and keeps to
    it (so two agents never swap back and forth); the lower index waits a few ticks,
    then detours too. With no detour at all, the agent that yields steps aside at once:
    sideways, else into a pocket off the other's line (an open doorway beside a
    corridor), and only else straight back, so a corridor crossing costs a step or two
    instead of backing all the way down; any blocked agent steps aside to a free floor
    cell after :data:`STUCK_SHUFFLE` ticks, which breaks the remaining deadlocks.
    """

    _dist: list[int] | None = None  # the map of all the goals (_full_map)
    _near: NearestGoals | None = None  # their nearest goals, per cell

    def __init__(self, nav: Navigator, agent: int, goals: frozenset[int]):
        self.nav, self.agent, self.goals = nav, agent, goals
        self.detour: LazyMap | None = None
        self.stuck = 0
        self._last = -1
        self._pause = 0  # ticks to stay put after stepping aside, to let others pass

    def remaining(self, state: HouseholdState) -> int:
        """Shortest walking distance left, ignoring agents (``INF`` when unreachable)."""
        return self._full_map()[state.agent_pos[self.agent]]

    def _full_map(self) -> list[int]:
        """The navigator's distance map of all the goals, kept from the first ask (the
        same values, without its cache's lookup twice a tick)."""
        if self._dist is None:
            self._dist = self.nav.distance_map(self.goals)
        return self._dist

    def next_action(self, state: HouseholdState, yielding: Yielding = NOBODY) -> int:
        """The next primitive action: 0 (wait or arrived) or -1 (no path can ever exist).

        Agents that ``yielding`` says wait and, unless this agent has been stuck a long
        time, the outranked ones (lower priority) are walked into: the env pushes them
        aside (:class:`~orgteams.envs.highlevel.crowding.Crowd` does).
        """
        nav, agent = self.nav, self.agent
        here = state.agent_pos[agent]
        if here in self.goals:
            return WAIT
        self.stuck = self.stuck + 1 if here == self._last else 0
        self._last = here
        if self._pause > 0:
            self._pause -= 1
            return WAIT
        occupant = nav.obstacles(state, agent, here, yielding, self.stuck < 2 * STUCK_SHUFFLE)
        if self.detour is not None:
            d = self.detour
            around = d[here]  # read once: a lazy map's cells are method calls
            step = None if around >= INF else next(
                ((dd, n) for dd, n in nav.neighbours[here] if d[n] == around - 1
                 and n not in occupant), None)
            if step is not None:
                return nav._enter(state, *step)
            self.detour = None
        # the map of the goals nobody takes (else of all): read off the map of all the
        # goals (shared and kept) where one of a cell's nearest goals is free
        if self._near is None:
            self._near = nav.nearest_goals(self.goals)
        step = self._downhill_step(state, here, occupant)
        if step is not None:
            return step
        return self._around(state, here, occupant)

    def _downhill_step(self, state: HouseholdState, here: int, occupant: _Obstacles
                       ) -> int | None:
        """The step :meth:`_around` takes when the way is free, or None where it may
        not be (``here``'s nearest goals all taken, or every step down blocked).

        Most of a crowd's 256 walkers walk on unhindered every tick; this reads the
        map of all the goals, not the map of the free ones (:class:`FewerGoals`), and
        only the cells one step closer (``here``'s downhill neighbours), as exactly:
        where one of ``here``'s nearest goals is free the free goals are as near as all
        of them (``to_go``); a neighbour is one step closer to the free goals iff it is
        one step closer to all of them and one of its own nearest goals is free (else
        the free ones lie farther), and no other neighbour is (the map changes by at
        most one a step, and the free goals are never nearer than all). The first such
        free neighbour, in the neighbours' order, is the step :meth:`_around` takes."""
        near = self._near
        nearest = near[here]
        if nearest is None:
            return None
        for g in nearest:
            if g not in occupant:
                break
        else:
            return None
        for d, n in near.downhill(here):
            if n in occupant:
                continue
            for g in near[n]:
                if g not in occupant:
                    return self.nav._enter(state, d, n)
        return None

    def _steps_down(self, here: int, occupant: _Obstacles, dist: FewerGoals
                    ) -> tuple[int, list[tuple[int, int]], bool]:
        """``here``'s distance to the free goals (``dist[here]``), the ``(direction,
        neighbour)`` pairs one step closer to them (``dist[n] == dist[here] - 1``), in
        the neighbours' order, and whether they were read off the map of all the goals
        (then :meth:`_beside` reads the neighbours so too).

        Where one of ``here``'s nearest goals is free, as :meth:`_downhill_step` reads
        them: off the map of all the goals, without growing the map of the free ones
        (a blocked walker of a crowd, dozens a tick, would grow one for cells it does
        not step to). Else off ``dist``, every neighbour read."""
        near = self._near
        nearest = near[here]
        if nearest is not None:
            for g in nearest:
                if g not in occupant:
                    break
            else:
                return self._steps_around_taken(here, occupant, dist)
            best = []
            for d, n in near.downhill(here):
                for g in near[n]:
                    if g not in occupant:
                        best.append((d, n))
                        break
            return self._full_map()[here], best, True
        return self._steps_down_plain(here, dist)

    def _steps_down_plain(self, here: int, dist: FewerGoals
                          ) -> tuple[int, list[tuple[int, int]], bool]:
        """:meth:`_steps_down` off ``dist``, every neighbour read."""
        to_go = dist[here]  # read once: a lazy map's cells are method calls
        return to_go, [(d, n) for d, n in self.nav.neighbours[here]
                       if dist[n] == to_go - 1], False

    def _steps_around_taken(self, here: int, occupant: _Obstacles, dist: FewerGoals
                            ) -> tuple[int, list[tuple[int, int]], bool]:
        """:meth:`_steps_down` where ``here``'s nearest goals are all taken.

        Where one of the goals a step farther (:meth:`NearestGoals.second`) is free, the
        free goals are one step farther than all of them (``to_go``), and a neighbour is
        one step closer to them iff it is one step closer to all the goals and one of
        its own goals a step farther is free (its nearest are among ``here``'s, all
        taken), or as far as ``here`` from all the goals and one of its nearest is free.
        Else off ``dist``, every neighbour read."""
        near = self._near
        for g in near.second(here):
            if g not in occupant:
                break
        else:
            return self._steps_down_plain(here, dist)
        full = self._full_map()
        level = full[here]
        best = []
        for d, n in self.nav.neighbours[here]:
            away = full[n]
            if away == level - 1:
                ring = near.second(n)
            elif away == level:
                ring = near[n]
            else:
                continue
            for g in ring:
                if g not in occupant:
                    best.append((d, n))
                    break
        return level + 1, best, True

    def _beside(self, n: int, to_go: int, best: list[tuple[int, int]],
                occupant: _Obstacles, dist: FewerGoals) -> int:
        """``dist[n]`` for a neighbour ``n`` of the walker's cell, where
        :meth:`_steps_down` read ``to_go`` and ``best`` off the map of all the goals
        (some goals free, some taken): read so too where it can be.

        A neighbour is at most one step nearer or farther than the walker; not one of
        ``best``, it is ``to_go`` from the free goals iff one of its goals that far is
        free: its nearest, or those a step farther (the next ring is not kept: the
        map is read there). A blocked walker of a crowd reads its neighbours to step
        aside, and would grow the map of its free goals out to each of them."""
        for _, m in best:
            if m == n:
                return to_go - 1
        off = to_go - self._full_map()[n]
        if off < 0:
            return to_go + 1
        if off > 1:
            return dist[n]
        for g in (self._near[n] if off == 0 else self._near.second(n)):
            if g not in occupant:
                return to_go
        return to_go + 1

    def _around(self, state: HouseholdState, here: int, occupant: _Obstacles) -> int:
        """The step toward the free goals, around the agents in the way (or aside)."""
        nav, agent = self.nav, self.agent
        dist = FewerGoals(nav, self._full_map(), self._near, self.goals, occupant)
        to_go, best, off_full = self._steps_down(here, occupant, dist)
        if to_go >= INF:
            return -1
        for d, n in best:
            if n not in occupant:
                return nav._enter(state, d, n)
        blockers = [occupant[n] for _, n in best if n in occupant]
        yields = agent > min(blockers)
        if yields or self.stuck >= STUCK_SHUFFLE:
            # the map of all the goals: its taken ones are blocked, as the free goals' map's
            # (dist.goals()) are not goals; same values, without finding which are taken
            # one longer than a walker not stuck long would take is not made
            detour, around = occupant.detour(
                nav, self.goals, INF if self.stuck >= 2 * STUCK_SHUFFLE
                else to_go + DETOUR_SLACK)
            # A short detour is taken at once; a long one only after waiting a while.
            if around < INF and (around <= to_go + DETOUR_SLACK
                                 or self.stuck >= 2 * STUCK_SHUFFLE):
                self.detour = detour
                for d, n in nav.neighbours[here]:
                    if detour[n] == around - 1:
                        return nav._enter(state, d, n)
            if off_full:  # read the neighbours as the steps down were
                def beside(n: int) -> int:
                    return self._beside(n, to_go, best, occupant, dist)
            else:
                beside = dist.__getitem__
            if self.stuck < STUCK_SHUFFLE:
                # Yield into a pocket: sideways, else off the blocker's line (a doorway
                # beside a corridor too), else straight back, floor before doorway.
                back = 2 * here - min(n for _, n in best if n in occupant)
                free = [(d, n) for d, n in nav.neighbours[here]
                        if n not in occupant and beside(n) >= to_go and (
                            nav.is_floor[n] or state.door_open[state.scene.door_at[n]])]
                free.sort(key=lambda dn: (beside(dn[1]) > to_go, dn[1] == back,
                                          not nav.is_floor[dn[1]]))
            else:
                free = [(d, n) for d, n in nav.neighbours[here]
                        if n not in occupant and nav.is_floor[n] and beside(n) >= to_go]
                free.sort(key=lambda dn: beside(dn[1]))
            if free and (yields or self.stuck >= STUCK_SHUFFLE):
                # Step aside, off the way (sideways before backwards).
                self._pause = 2 if self.stuck >= STUCK_SHUFFLE else 0
                return nav._enter(state, *free[(state.tick // 7 + agent) % len(free)
                                               if self.stuck >= STUCK_SHUFFLE else 0])
        return WAIT


__all__ = ["INF", "MAX_CACHED_MAPS", "NOBODY", "FewerGoals", "LazyMap", "Navigator", "NearestGoals",
           "Pocket", "RankedMap", "Walker", "Yielding"]
