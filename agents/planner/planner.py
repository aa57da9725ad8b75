"""PlannerAgent: a competent scripted teammate in high-level actions, reading a MemberView.

It keeps a belief of where objects are (its env memory plus what teammates said),
and each time it must decide it picks, in order:

1. an ``assign`` it received from a leader (one it knows is not needed it corrects
   when ``rules.corrections`` allows, else obeys);
2. ``grab`` the nearest known object that the goal still needs and nobody else has
   claimed (while a hand is free);
3. ``put`` what it holds on the nearest furniture of the goal's target type;
4. ``explore`` the nearest room not fully observed that nobody else claimed
   (the room it stands in first);
5. ``wait``.

It says what it does in small structured :class:`~orgteams.agents.messages.TeamMessage`
s: ``claim`` for each object it goes to grab and each room it goes to explore,
``found`` for goal objects it sees, ``done`` when it placed one, ``release`` when
it gives up. Two claims on one object: the earlier tick wins, then the lower
agent index. A leader of any tier (``role="leader"``, a seat the runner gives, and
``rules.assigns``: it has reports, under ``rules.assign_work: leader``; the member
sets ``rules``,
:mod:`~orgteams.agents.member_rules`) orders each of its own reports that needs a
decision to grab the nearest object still needed, else to explore the nearest room
nobody explored, instead of everyone claiming greedily
(:mod:`~orgteams.agents.planner.lead`): a pyramid's top leader orders its vice
leaders, each vice leader its members. It takes orders only from its own boss
(``rules.boss``), and reports each room it has explored to that boss (``done`` with
``room``), since the boss assigns rooms.

:func:`orgteams.organizations.rounds.planner_team.run_team` runs one episode of planners
with everyone hearing everyone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import islice
from operator import countOf
from typing import TYPE_CHECKING, Any

from orgteams.agents.member_rules import MemberRules
from orgteams.agents.messages import EVERYONE, TeamMessage
from orgteams.agents.planner.intake import take_in
from orgteams.agents.planner.lead import ROOM, lead
from orgteams.agents.view import MemberView

if TYPE_CHECKING:
    from orgteams.envs.core.layout import Layout
    from orgteams.envs.core.navigation import Navigator
    from orgteams.envs.observe.memory import AgentMemory

ROLES = ("member", "leader")


def _index(agent: str) -> int:
    return int(agent.rpartition("_")[2])


_wanted: tuple = (None, (), frozenset(), {})
"""(goal, progress, classes it still wants, units each class still needs): one read,
replaced whole (:meth:`PlannerAgent._wanted_classes`); the dict is never changed."""
_CLASSES: dict[str, str] = {}
"""Object name -> its class (the name less its ``_n``), kept for the first
:data:`_CLASSES_KEPT` names met (a scene has a few hundred objects)."""
_CLASSES_KEPT = 1 << 16


def _class_of(obj: str) -> str:
    cls = obj.rpartition("_")[0]
    if len(_CLASSES) < _CLASSES_KEPT:
        _CLASSES[obj] = cls
    return cls


_rooms: tuple = (None, None, {})  # (navigator, layout, every room's distance map by name)


def _room_maps(nav: Navigator, layout: Layout, index: dict[str, int]) -> dict[str, list[int]]:
    """Every room of ``layout`` (``index``: room name -> its first index) by name -> its
    walking distance map (:meth:`Navigator.distance_map`), made once for a team: each
    decision of a 256-agent team, and a leader's every order, measures the way to each
    of a house's dozens of rooms. A map is the navigator's distance from every cell on
    the static grid, never changed (its cache may drop one and make it again, equal), so
    reading a kept one gives what asking the navigator gives."""
    global _rooms
    known = _rooms  # one read: episodes in other threads replace it
    if known[0] is not nav or known[1] is not layout:
        known = _rooms = (nav, layout, {r: nav.distance_map(nav.room_goal(i))
                                        for r, i in index.items()})
    return known[2]


def _goal_needs(world) -> tuple:
    """:data:`_wanted` for ``world``'s goal and progress. Every planner of a team asks it
    each round of the same goal and progress: derived once for all of them (the goal is
    an immutable tuple, the progress a tuple of counts)."""
    global _wanted
    goal, progress = world.scene.goal, world.progress
    known = _wanted  # one read: episodes in other threads replace it
    if known[0] is not goal or known[1] != progress:
        need: dict[str, int] = {}
        for p, have in zip(goal, progress):
            need[p.cls] = need.get(p.cls, 0) + p.count - have
        known = _wanted = (goal, tuple(progress), frozenset(
            p.cls for p, have in zip(goal, progress) if have < p.count), need)
    return known


class PlannerAgent:
    """Scripted expert. ``act(env)`` returns a high-level action id."""

    def __init__(self, agent_id: str, role: str = "member"):
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        self.agent_id, self.role = agent_id, role
        self.claims: dict[str, tuple[str, int]] = {}  # object -> (agent, tick)
        self.room_claims: dict[str, str] = {}  # agent -> room it explores
        self.assignment: dict | None = None
        self.assigned: dict[str, str] = {}  # leader: object or "room:<r>" -> agent
        self.assigned_at: dict[str, int] = {}  # leader: the tick of each order in assigned
        self.explored: set[str] = set()  # rooms teammates reported explored
        # what reports it heard say of where objects are (TeamMessage.noted), noted in
        # its env memory at its next turn (receive has no env)
        self._heard: list[tuple[str, str, Any]] = []
        self._outbox: list[TeamMessage] = []
        self._announced: set[tuple[str, str]] = set()
        self._rooms_reported: set[str] = set()
        self._placed: set[str] = set()
        self._last_action = ""
        self._intent: str | None = None  # decided (and claimed) while communicating
        self.rules = MemberRules()  # the organization's rules for it (the member sets them)
        self.intents: dict[str, str] = {}  # agent -> object its latest status said it grabs
        self.placed_by: Counter = Counter()  # goal objects each agent placed, as heard
        self.found_by: Counter = Counter()  # goal objects each agent reported seeing
        self.assigner: str | None = None  # who gave the pending assignment
        self.abstaining = False  # nothing useful to do this round (it may abstain)
        # whose order or claim its latest decision depended on: {agent: "order" | "claim"}
        self.depends_on: dict[str, str] = {}
        self._intent_depends: dict[str, str] = {}
        self._explored: tuple = (None, -1, frozenset())  # (memory, version, rooms explored)
        self._layout_indexes: tuple = (None, {}, {})  # (layout, furniture, rooms by name)
        self._furniture_maps: tuple = (None, None, {})  # (nav, layout, maps by name): _dist
        # (memory, how many rooms it had seen, room -> index in its rooms, the rooms seen
        # and not reported yet): see _explored_unreported
        self._unreported: tuple = (None, 0, {}, set())

    # ---- messages ----
    def receive(self, messages: list[TeamMessage]) -> None:
        """Take in teammates' messages (applied to the env memory at the next call)."""
        me = self.agent_id
        # a 256-agent team hands each planner hundreds a round: what the loop reads of
        # itself is read once (nothing in it changes its rules, nor which dicts it uses)
        intents, claims, room_claims = self.intents, self.claims, self.room_claims
        # a list handed alike to many: its statuses and room claims as their stores
        # leave the tables, derived once (intake); the rest read here
        found_by, heard, rules = self.found_by, self._heard, self.rules
        relays = rules.assigns and rules.peers  # a leader relaying its reports' reports
        # found reports too, when it relays none (a relay is said report by report)
        rest = take_in(messages, me, intents, room_claims, *(
            (None, None) if relays else (found_by, heard)))
        if rest is not None:
            messages = rest
        for m in messages:
            if m.sender == me or (m.receivers != EVERYONE and me not in m.receivers):
                continue  # its own, or not addressed to it
            kind = m.kind
            if kind == "found":  # every goal object seen is reported to the team (most
                # of what a planner hears under sequential): first, and done
                found_by[m.speaks_for] += 1  # a peer leader's relay, else the sender
                if relays and m.sender in rules.reports:
                    self._say(kind, rules.peers, **{**m.content, "by": m.sender})
                note = m.noted  # where it is, read once for all its readers
                if note is not None:
                    heard.append(note)
                continue
            # what a status or claim says is read from the message, made once for all
            # its readers (grabs, claimed): each reader only stores it
            if kind == "status":  # most of what a big team hears under shared
                target = m.grabs
                if target is not None:
                    intents[m.sender] = target
                else:
                    intents.pop(m.sender, None)
                continue
            if kind == "claim":  # the next most (claims seen, shared; rooms explored)
                claimed = m.claimed
                if claimed is None:
                    continue
                room, key, value = claimed
                if room:  # 256 explorers' claims: nothing more is done with one
                    room_claims[key] = value  # whom it speaks for -> the room
                    continue
                mine = claims.get(key)  # the object's claim it holds: (by, tick)
                if mine is None or mine[0] != me or \
                        (value[1], _index(value[0])) < (mine[1], _index(me)):
                    claims[key] = value
                continue
            c = m.content
            by = m.speaks_for  # a peer leader's relay, else the sender
            if kind == "release":
                if "object" in c and claims.get(c["object"], ("",))[0] == m.sender:
                    del claims[c["object"]]
                    self.assigned.pop(c["object"], None)
                if "room" in c and room_claims.get(m.sender) == c["room"]:
                    del room_claims[m.sender]
            elif kind == "done" and "room" in c:
                self.explored.add(c["room"])
            elif kind == "done":
                claims.pop(c["object"], None)
                self.assigned.pop(c["object"], None)
                if c["object"] not in self._placed:
                    self.placed_by[by] += 1
                self._placed.add(c["object"])
            elif kind == "assign" and c.get("agent") == me and (
                    rules.boss is None or m.sender == rules.boss):
                # only its own leader's orders: an order from another tier or the other
                # half's leader is not one it takes (orders never skip or cross tiers)
                self.assignment, self.assigner = dict(c), m.sender
            elif kind == "correct" and "action" in c:
                target = c["action"].partition(":")[2]
                key = f"room:{target}" if c["action"].startswith("explore:") else target
                if self.assigned.get(key) == m.sender:
                    del self.assigned[key]  # the member told why it will not do it
            if relays and kind == "done" and m.sender in rules.reports:
                # what its reports tell it, the other leaders hear from it: leaders
                # coordinate by messages (never orders), each knowing what both halves found
                self._say(kind, rules.peers, **{**c, "by": m.sender})
            if kind == "assign" or kind == "done":  # what _apply_heard notes
                note = m.noted
                if note is not None:
                    heard.append(note)

    def _apply_heard(self, env: MemberView) -> None:
        """Notes in its env memory where the reports it heard say objects are."""
        note = env.memory(self.agent_id).note_object
        for obj, location, tick in self._heard:
            try:
                note(obj, location, tick)
            except (KeyError, ValueError):
                continue  # a stale note (an unknown name) is ignored, not fatal
        self._heard.clear()

    def _say(self, kind: str, receivers=EVERYONE, **content) -> None:
        self._outbox.append(TeamMessage.structured(self.agent_id, receivers, kind, content))

    def communicate(self, env: MemberView, inbox: list[TeamMessage],
                    reach: Sequence[str] | None = None) -> list[TeamMessage]:
        """Read ``inbox``; return this agent's messages for this round.

        ``reach``: the agents this one may message (None: everyone); a leader assigns
        work only to its reports (``rules.reports``) among them, so no order skips or
        crosses a tier or is addressed to someone the channels cut off. A leader
        assigns only when the rules say it does (``rules.assigns``); under
        ``rules.may_abstain`` an agent with nothing useful to do decides nothing and
        sets ``abstaining``.
        """
        if inbox:  # most of a 256-agent team, most turns, are shown no one's choices
            self.receive(inbox)
        if self._heard:  # most of a 256-agent team hear nothing it notes, most rounds
            self._apply_heard(env)
        self._announce(env)
        if self.role == "leader" and self.rules.assigns:  # to its own reports only
            reachable = None if reach is None else set(reach)  # 255 names at 256 agents
            lead(self, env, [a for a in self.rules.reports
                             if reachable is None or a in reachable])
        decides = env.needs_decision(self.agent_id)  # asked once: nothing here steps the env
        self.abstaining = self.rules.may_abstain and decides and not self._useful(env)
        if decides and not self.abstaining:
            self._intent = self._decide(env, claim=True)
            self._intent_depends = self.depends_on
        out, self._outbox = self._outbox, []
        return out

    def status(self, env: MemberView) -> str:
        """What it does: its decision this round, else its running plan, else ``wait``."""
        if self._intent:
            return self._intent
        current = env.current(self.agent_id)
        return f"{current.kind}:{current.target}" if current is not None else "wait"

    def _useful(self, env: MemberView) -> bool:
        """Whether it has something useful to do: it holds something, has an order, or
        some goal unit still needs someone (not done, held or claimed by others)."""
        if env.memory(self.agent_id).held or self.assignment is not None:
            return True
        # :meth:`_remaining` with nothing held, asked only whether a unit is left: the
        # classes the goal still needs, each crossed off once others' claims and orders
        # cover it (most of a 256-agent team abstain, asking it every round)
        left = {c: n for c, n in self._goal_need(env).items() if n > 0}
        me, placed, claims, classes = self.agent_id, self._placed, self.claims, _CLASSES
        taken = [o for o, (who, _) in claims.items() if who != me and o not in placed]
        taken += [o for o, who in self.assigned.items()
                  if who != me and o not in claims and not o.startswith(ROOM)]
        for obj in taken:
            if not left:
                return False
            cls = classes.get(obj)
            if cls is None:
                cls = _class_of(obj)
            n = left.get(cls)
            if n == 1:
                del left[cls]
            elif n is not None:
                left[cls] = n - 1
        return bool(left)

    def _announce(self, env: MemberView) -> None:
        mem = env.memory(self.agent_id)
        wanted = None  # the goal is read only for an object seen (few of a big team's)
        for obj, b in mem.objects.items():
            if b.source == "seen" and b.kind == "furniture":
                if wanted is None:
                    wanted = self._wanted_classes(env)
                if (obj.rpartition("_")[0] in wanted
                        and (obj, b.location) not in self._announced):
                    self._announced.add((obj, b.location))
                    self.found_by[self.agent_id] += 1
                    self._say("found", object=obj, location=b.location, tick=b.tick)
        rules = self.rules
        to, boss = rules.report_to, rules.boss
        if rules.assign_work == "leader" and boss is not None and (to is None or boss in to):
            # its leader assigns rooms and knows only what it is told: which ones are done
            known, count, _, pending = self._unreported
            if not pending and known is mem and count == len(mem.rooms_seen):
                return  # no room seen since it last asked, none seen left unexplored
            for room in self._explored_unreported(mem):
                self._rooms_reported.add(room)
                self._say("done", room=room)

    def _explored_unreported(self, mem: AgentMemory) -> list[str]:
        """The rooms of ``mem.rooms`` seen and explored but not reported yet, in that
        order. Each of a 256-agent team asked it of every room of the house every round;
        only the rooms seen and not reported can be (a room not seen is not explored),
        and ``mem.rooms_seen`` only grows (rooms are added, never taken out), so those
        are kept (``_unreported``) and the rooms newly seen added when its size changes.
        tests/agents/planner/test_planner.py compares it with asking every room."""
        known, count, order, pending = self._unreported
        seen = mem.rooms_seen
        if known is not mem:  # a memory it has not read before: every room seen is new
            order = {r: i for i, r in reversed(list(enumerate(mem.rooms)))}  # first index
            known, count, pending = mem, 0, set()
        if len(seen) != count:
            pending.update(r for r in islice(seen, count, None)
                           if r in order and r not in self._rooms_reported)
            count = len(seen)
        self._unreported = (known, count, order, pending)
        if not pending:
            return []
        explored = self._explored_rooms(mem)  # kept for its decision this tick too
        done = sorted((r for r in pending if r in explored), key=order.__getitem__)
        pending.difference_update(done)
        return done

    # ---- acting ----
    def act(self, env: MemberView) -> str:
        """The high-level action id for this round (``continue`` while a plan runs)."""
        if self._heard:
            self._apply_heard(env)
        me = self.agent_id
        self.depends_on = {}
        if not env.needs_decision(me):
            current = env.current(me)
            lost = (current is not None and current.kind == "grab"
                    and self.claims.get(current.target, (me,))[0] != me)
            if not lost:
                return "continue"
        if self.abstaining:
            return "wait"
        intent, self._intent = self._intent, None
        kind, _, target = (intent or "").partition(":")
        # the one id asked of the env (is_available answers as its list of actions does),
        # not that list made into a set for each decider of a 256-agent team
        if intent is not None and env.is_available(me, intent) and (
                kind != "grab" or self.claims.get(target, ("",))[0] == me):
            action = intent  # what this agent announced; nobody outranked its claim
            self.depends_on = self._intent_depends
        else:
            action = self._decide(env, claim=True)
        self._last_action = action
        return action

    def _decide(self, env: MemberView, claim: bool) -> str:
        """Choose an action; with ``claim`` queue the claim messages it implies. Sets
        ``depends_on``: the leader whose order it carries out, or the teammate whose
        claim (or chosen action) took what it would have chosen otherwise."""
        self._note_results(env)
        valid = {a.id for a in env.available_actions(self.agent_id)}
        assigner = self.assigner
        choice = self._from_assignment(env, valid)
        if choice is not None:
            self.depends_on = {assigner: "order"} if assigner not in (None, self.agent_id) \
                else {}
        else:
            choice = self._own_choice(env, valid)
            self.depends_on = self._deferred_to(env, valid, choice)
        if claim:
            self._claim(env, choice)
        return choice

    def _own_choice(self, env: MemberView, valid: set[str]) -> str:
        return self._grab_or_put(env, valid) or self._explore(env, valid) or "wait"

    def _deferred_to(self, env: MemberView, valid: set[str], choice: str) -> dict[str, str]:
        """``{agent: "claim"}`` when, with teammates' claims and chosen actions ignored,
        it would have chosen a target ``agent`` claimed; else ``{}``."""
        me = self.agent_id
        claims, room_claims, intents = self.claims, self.room_claims, self.intents
        # whether any teammate claimed or chose anything, read without copying the
        # team's claims (256 of them, each deciding agent every round)
        if not (len(room_claims) > (me in room_claims) or len(intents) > (me in intents)
                or any(c[0] != me for c in claims.values())):
            return {}
        self.claims = {o: c for o, c in claims.items() if c[0] == me}
        self.room_claims = {me: room_claims[me]} if me in room_claims else {}
        self.intents = {}
        try:
            free = self._own_choice(env, valid)
        finally:
            self.claims, self.room_claims, self.intents = claims, room_claims, intents
        if free == choice:
            return {}
        kind, _, target = free.partition(":")
        if kind == "grab":
            owner = claims.get(target, (None,))[0]
            who = (owner if owner != me else None) or next(
                (a for a, t in intents.items() if a != me and t == target), None)
        elif kind == "explore":
            who = next((a for a, r in room_claims.items() if a != me and r == target), None)
        else:
            who = None
        return {who: "claim"} if who is not None else {}

    def _claim(self, env: MemberView, choice: str) -> None:
        kind, _, target = choice.partition(":")
        tick = env.world.tick
        held = env.memory(self.agent_id).held
        for obj, (who, _) in list(self.claims.items()):
            if who == self.agent_id and obj not in held and choice != f"grab:{obj}":
                del self.claims[obj]  # no longer going for it: let others have it
                self._say("release", object=obj)
        if kind == "grab" and self.claims.get(target, ("",))[0] != self.agent_id:
            self.claims[target] = (self.agent_id, tick)
            self._say("claim", object=target, target=self._target_of(env, target), tick=tick)
        elif kind == "explore" and self.room_claims.get(self.agent_id) != target:
            self.room_claims[self.agent_id] = target
            self._say("claim", room=target)

    def _note_results(self, env: MemberView) -> None:
        """Turn this agent's finished plans into done / release messages."""
        mem = env.memory(self.agent_id)
        me = self.agent_id
        for obj, (who, _) in list(self.claims.items()):
            if who != me:
                continue
            belief = mem.objects.get(obj)
            if belief is not None and belief.kind == "furniture" and self._on_target(env, obj):
                del self.claims[obj]
                self._placed.add(obj)
                self.placed_by[me] += 1
                self._say("done", object=obj, location=belief.location, tick=belief.tick,
                          target=self._target_of(env, obj))
            elif belief is None or (belief.kind == "agent" and belief.location != me) or (
                    belief.kind == "furniture" and env.needs_decision(me)
                    and self._last_action == f"grab:{obj}"):
                del self.claims[obj]
                self._say("release", object=obj)

    def _explored_rooms(self, mem: AgentMemory) -> frozenset[str]:
        """The rooms ``mem`` holds explored (:meth:`AgentMemory.room_explored`), found in
        one pass over its furniture and kept while its ``version`` stands: a decision
        asked it of each of a house's dozens of rooms (each scanning all the furniture),
        twice (its own choice, and the one :meth:`_deferred_to` compares it with)."""
        known, version, rooms = self._explored
        if known is not mem or version != mem.version:
            closed = {b.room for b in mem.furniture.values()
                      if b.is_container and b.contents is None}
            rooms = frozenset(r for r in mem.rooms_seen if r not in closed)
            self._explored = (mem, mem.version, rooms)
        return rooms

    # ---- goal bookkeeping ----
    def _goal(self, env: MemberView):
        world = env.world
        return world.scene.goal, world.progress

    def _wanted_classes(self, env: MemberView) -> frozenset[str]:
        return _goal_needs(env.world)[2]

    def _goal_need(self, env: MemberView) -> dict[str, int]:
        """Units each goal class still needs (the goal less its progress), to be read only:
        the same for the whole team (:func:`_goal_needs`)."""
        return _goal_needs(env.world)[3]

    def _target_of(self, env: MemberView, obj: str) -> str:
        cls = obj.rpartition("_")[0]
        goal, _ = self._goal(env)
        return next((p.target for p in goal if p.cls == cls), "")

    def _on_target(self, env: MemberView, obj: str) -> bool:
        mem = env.memory(self.agent_id)
        b = mem.objects.get(obj)
        if b is None or b.kind != "furniture":
            return False
        target = self._target_of(env, obj)
        f = mem.furniture.get(b.location)
        ftype = f.type if f else b.location.rstrip("_0123456789")
        return bool(target) and ftype == target

    def _remaining(self, env: MemberView) -> dict[str, int]:
        """Units each class still needs after what is held, claimed by others and (a
        leader) ordered to others and not yet claimed."""
        need = dict(self._goal_need(env))  # the team's, copied
        for obj in env.memory(self.agent_id).held:
            cls = obj.rpartition("_")[0]
            if cls in need:
                need[cls] -= 1
        # the team's claims and orders, each object's class read from a table (asked of
        # every planner each round: a 256-agent team's claims, each split by name)
        me, placed, claims, classes = self.agent_id, self._placed, self.claims, _CLASSES
        for obj, (who, _) in claims.items():
            if who != me and obj not in placed:
                cls = classes.get(obj)
                if cls is None:
                    cls = _class_of(obj)
                if cls in need:
                    need[cls] -= 1
        for obj, who in self.assigned.items():
            if who != me and obj not in claims and not obj.startswith(ROOM):
                cls = classes.get(obj)
                if cls is None:
                    cls = _class_of(obj)
                if cls in need:
                    need[cls] -= 1
        return need

    def _candidates(self, env: MemberView) -> list[str]:
        """Known objects the goal still needs that nobody else claimed."""
        me = self.agent_id
        mem = env.memory(self.agent_id)
        need = self._remaining(env)
        out = []
        for obj, b in mem.objects.items():
            cls = obj.rpartition("_")[0]
            if (b.kind == "furniture" and need.get(cls, 0) > 0 and not self._on_target(env, obj)
                    and self.claims.get(obj, (me,))[0] == me
                    and self.assigned.get(obj, me) == me
                    and all(t != obj for a, t in self.intents.items() if a != me)):
                out.append(obj)
        return sorted(out)

    def _indexes(self, layout) -> tuple[dict[str, int], dict[str, int]]:
        """The layout's furniture and rooms by name -> index (the first of a name), made
        once per layout: a decision looked each one up by scanning the layout's list,
        once per candidate object or room (a big house has hundreds of pieces)."""
        known, furniture, rooms = self._layout_indexes
        if known is not layout:
            furniture, rooms = {}, {}
            for i, f in enumerate(layout.furniture):
                furniture.setdefault(f.name, i)
            for i, r in enumerate(layout.rooms):
                rooms.setdefault(r, i)
            self._layout_indexes = (layout, furniture, rooms)
        return furniture, rooms

    def _dist(self, env: MemberView, agent: str, furniture: str) -> int:
        """Walking distance from ``agent`` to ``furniture``, from the furniture's distance
        map (:meth:`Navigator.distance_map`) kept after its first use while the navigator
        and layout stand: a map is the navigator's distance from every cell on the
        static grid, never changed (its cache may drop one and make it again, equal)."""
        world, nav = env.world, env.nav
        layout = world.scene.layout
        known_nav, known_layout, maps = self._furniture_maps
        if known_nav is not nav or known_layout is not layout:
            maps = {}
            self._furniture_maps = (nav, layout, maps)
        dist = maps.get(furniture)
        if dist is None:
            f = self._indexes(layout)[0][furniture]
            dist = maps[furniture] = nav.distance_map(nav.furniture_goal(f))
        return dist[world.agent_pos[env.agent_index[agent]]]

    def _nearest_room(self, env: MemberView, agent: str, rooms: list[str]) -> str:
        """The room of ``rooms`` nearest to ``agent`` (ties: the first by name); where it
        stands is read once for all of them (a big house has dozens), each room's
        distance from the team's room maps (:func:`_room_maps`)."""
        world = env.world
        here = world.agent_pos[env.agent_index[agent]]
        maps = _room_maps(env.nav, world.scene.layout, self._indexes(world.scene.layout)[1])
        return min([(maps[r][here], r) for r in rooms])[1]

    # ---- choices ----
    def _from_assignment(self, env: MemberView, valid: set[str]) -> str | None:
        """The leader's order, unless it cannot be done or is corrected (:meth:`_correct`)."""
        a, self.assignment = self.assignment, None
        if a is None:
            return None
        kind, _, target = a["action"].partition(":")
        mem = env.memory(self.agent_id)
        if a["action"] not in valid or (kind == "grab" and len(mem.held) >= 2):
            return self._correct(a, "not possible now")
        if kind == "grab" and self._on_target(env, target):
            return self._correct(a, "done already")
        owner = self.claims.get(target, (self.agent_id,))[0]
        if kind == "grab" and owner != self.agent_id:
            return self._correct(a, f"{owner} has it")
        if kind == "explore" and mem.room_explored(target):
            return self._correct(a, "explored already")
        return a["action"]

    def _correct(self, order: dict, reason: str) -> str | None:
        """Under ``rules.corrections`` tell the leader why (the order is dropped); else
        obey an order that is possible but not needed (placed, claimed, explored)."""
        if self.rules.corrections and self.assigner is not None:
            self._say("correct", (self.assigner,), agent=self.agent_id,
                      action=order["action"], reason=reason)
            return None
        return None if reason == "not possible now" else order["action"]

    def _grab_or_put(self, env: MemberView, valid: set[str]) -> str | None:
        mem = env.memory(self.agent_id)
        me = self.agent_id
        if len(mem.held) < 2:
            cands = [o for o in self._candidates(env) if f"grab:{o}" in valid]
            if cands:
                best = min(cands, key=lambda o: (self._dist(env, me, mem.objects[o].location), o))
                return f"grab:{best}"
        if not mem.held:
            return None
        goal, _ = self._goal(env)
        held_cls = {o.rpartition("_")[0] for o in mem.held}
        targets = {p.target for p in goal if p.cls in held_cls}
        spots = [b.name for b in mem.furniture.values() if b.type in targets
                 and f"put:{b.name}" in valid]
        if not spots and targets:
            return None  # the target furniture is not seen yet: explore to find it
        if not spots:  # nothing held is wanted: set it down on the nearest free surface
            spots = [b.name for b in mem.furniture.values() if f"put:{b.name}" in valid
                     and b.type not in {p.target for p in goal}]
        if not spots:
            return None
        return f"put:{min(spots, key=lambda f: (self._dist(env, me, f), f))}"

    def _explore(self, env: MemberView, valid: set[str]) -> str | None:
        me = self.agent_id
        mem = env.memory(me)
        explored = self._explored_rooms(mem)
        rooms = [r for r in mem.rooms if r not in explored and f"explore:{r}" in valid]
        if not rooms:
            return None
        # the rooms others claimed: every claim's room, less its own unless another
        # claims it too (256 claims: their values at once, not a loop over the pairs);
        # whether another does is asked only of a room it may choose (most deciders
        # explored theirs: it is not among ``rooms``), counted without a copy
        claims = self.room_claims
        others = set(claims.values())
        mine = claims.get(me)
        if mine is not None and mine in rooms and countOf(claims.values(), mine) == 1:
            others.discard(mine)
        if self.assigned:
            others |= {k[len(ROOM):] for k in self.assigned if k.startswith(ROOM)}
        free = [r for r in rooms if r not in others] or rooms
        if not free:
            return None
        return f"explore:{self._nearest_room(env, me, free)}"


__all__ = ["PlannerAgent", "ROLES"]
