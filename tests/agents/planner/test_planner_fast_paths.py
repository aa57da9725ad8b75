"""The planner's fast paths for big teams decide exactly as the plain code they replace.

At 256 agents a planner's decision read the team's claims and its whole memory several
times over; the planner now keeps what it derived while its source stands (explored
rooms per memory version, the layout's indexes, object classes, the classes the goal
still wants) and reads the team's claims once. Each test replays real episodes' states,
then states shaken at random (claims, room claims, statuses and orders of random
teammates, the planner itself among them), through both the fast path and the plain
code as it was (``_plain_*`` below), and compares the answers.
"""

from __future__ import annotations

import random

import pytest

import orgteams.agents.planner.lead as lead_module
import orgteams.agents.planner.planner as planner_module
from orgteams.agents.planner.lead import ROOM
from orgteams.agents.planner.planner import PlannerAgent
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.organizations.spec.library import load_organization
from orgteams.run import build_team


# ---- the plain code, as it was before the fast paths ----
def _plain_explored(mem) -> set[str]:
    return {r for r in mem.rooms if mem.room_explored(r)}


def _plain_explore(p: PlannerAgent, env, valid: set[str]) -> str | None:
    me = p.agent_id
    mem = env.memory(me)
    others = {r for a, r in p.room_claims.items() if a != me}
    others |= {k[len(ROOM):] for k, a in p.assigned.items() if k.startswith(ROOM)}
    rooms = [r for r in mem.rooms if not mem.room_explored(r) and f"explore:{r}" in valid]
    free = [r for r in rooms if r not in others] or rooms
    if not free:
        return None
    here = env.world.agent_pos[env.agent_index[me]]
    order, nav = env.world.scene.layout.rooms, env.nav
    return "explore:" + min(free, key=lambda r: (
        nav.distance(here, nav.room_goal(order.index(r))), r))


def _plain_dist(env, agent: str, furniture: str) -> int:
    world = env.world
    f = next(i for i, x in enumerate(world.scene.layout.furniture) if x.name == furniture)
    return env.nav.distance(world.agent_pos[env.agent_index[agent]], env.nav.furniture_goal(f))


def _plain_remaining(p: PlannerAgent, env) -> dict[str, int]:
    goal, progress = p._goal(env)
    need: dict[str, int] = {}
    for pred, have in zip(goal, progress):
        need[pred.cls] = need.get(pred.cls, 0) + pred.count - have
    for obj in env.memory(p.agent_id).held:
        cls = obj.rpartition("_")[0]
        if cls in need:
            need[cls] -= 1
    for obj, (who, _) in p.claims.items():
        cls = obj.rpartition("_")[0]
        if who != p.agent_id and cls in need and obj not in p._placed:
            need[cls] -= 1
    for obj, who in p.assigned.items():
        cls = obj.rpartition("_")[0]
        if who != p.agent_id and cls in need and obj not in p.claims \
                and not obj.startswith(ROOM):
            need[cls] -= 1
    return need


def _plain_deferred_to(p: PlannerAgent, env, valid: set[str], choice: str) -> dict[str, str]:
    me = p.agent_id
    others = ({o: c for o, c in p.claims.items() if c[0] != me},
              {a: r for a, r in p.room_claims.items() if a != me},
              {a: t for a, t in p.intents.items() if a != me})
    if not any(others):
        return {}
    kept = (p.claims, p.room_claims, p.intents)
    p.claims = {o: c for o, c in p.claims.items() if c[0] == me}
    p.room_claims = {a: r for a, r in p.room_claims.items() if a == me}
    p.intents = {}
    try:
        free = p._own_choice(env, valid)
    finally:
        p.claims, p.room_claims, p.intents = kept
    if free == choice:
        return {}
    kind, _, target = free.partition(":")
    if kind == "grab":
        who = others[0].get(target, (None,))[0] or next(
            (a for a, t in others[2].items() if t == target), None)
    elif kind == "explore":
        who = next((a for a, r in others[1].items() if r == target), None)
    else:
        who = None
    return {who: "claim"} if who is not None else {}


# ---- the states compared ----
def _shake(p: PlannerAgent, env, rng: random.Random) -> None:
    """Random claims, room claims, statuses and (a leader's) orders of random teammates,
    the planner itself among them, on objects and rooms it knows; some objects placed."""
    mem = env.memory(p.agent_id)
    agents = list(env.agents)
    objects = list(mem.objects) or list(env.world.scene.objects)
    rooms = list(mem.rooms)
    for _ in range(rng.randint(0, 12)):
        p.claims[rng.choice(objects)] = (rng.choice(agents), rng.randint(0, 30))
    for _ in range(rng.randint(0, 12)):
        p.room_claims[rng.choice(agents)] = rng.choice(rooms)
    for _ in range(rng.randint(0, 6)):
        p.intents[rng.choice(agents)] = rng.choice(objects)
    for _ in range(rng.randint(0, 6)):
        key = rng.choice([rng.choice(objects), ROOM + rng.choice(rooms)])
        p.assigned[key] = rng.choice(agents)
    if rng.random() < 0.5:
        p.room_claims[p.agent_id] = rng.choice(rooms)
    for _ in range(rng.randint(0, 3)):  # placed as heard, claimed or not
        p._placed.add(rng.choice(list(p.claims) or objects))


def _check(p: PlannerAgent, env, rng: random.Random) -> int:
    """Compare every fast path with its plain code on ``p``'s state now; returns how
    many decisions were compared."""
    me = p.agent_id
    mem = env.memory(me)
    assert set(p._explored_rooms(mem)) == _plain_explored(mem)
    for f in list(mem.furniture)[:5]:
        assert p._dist(env, me, f) == _plain_dist(env, me, f)
    assert p._remaining(env) == _plain_remaining(p, env)
    assert p._useful(env) == (bool(mem.held) or p.assignment is not None or any(
        n > 0 for n in _plain_remaining(p, env).values()))
    goal, progress = p._goal(env)
    assert p._wanted_classes(env) == {g.cls for g, have in zip(goal, progress) if have < g.count}
    valid = {a.id for a in env.available_actions(me)}
    assert p._explore(env, valid) == _plain_explore(p, env, valid)
    choice = p._own_choice(env, valid)
    assert p._deferred_to(env, valid, choice) == _plain_deferred_to(p, env, valid, choice)
    return 1


@pytest.mark.parametrize("org_name", ["leader", "shared", "sequential"])
def test_fast_paths_decide_as_the_plain_code_in_episodes_and_shaken_states(org_name):
    org = load_organization(org_name)
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=24)
    rng = random.Random(f"fast-paths-{org_name}")
    compared = []

    def on_round(r, lines):
        view = runner.state.view
        for member in runner.state.members.values():
            p = member.planner
            if rng.random() < 0.25:  # the real state, then (on a copy) shaken ones
                compared.append(_check(p, view, rng))
                saved = (dict(p.claims), dict(p.room_claims), dict(p.intents), dict(p.assigned),
                         set(p._placed))
                for _ in range(3):
                    _shake(p, view, rng)
                    compared.append(_check(p, view, rng))
                p.claims, p.room_claims, p.intents, p.assigned, p._placed = saved

    runner = TeamRunner(env, org, build_team("planner", 24, org), max_rounds=12,
                        on_round=on_round)
    result = runner.run(seed=0)
    assert result.summary.rounds == 12
    assert len(compared) > 100  # states of every kind were compared, not a handful


def test_cached_explored_rooms_follow_the_memory_as_it_changes():
    """A memory that learns (a room seen, a container opened, a note heard) bumps its
    version: the cached rooms are derived again, never read stale."""
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=4)
    env.reset(seed=1)
    p = PlannerAgent("agent_0")
    mem = env.memory("agent_0")
    before = p._explored_rooms(mem)
    assert set(before) == _plain_explored(mem)
    assert p._explored_rooms(mem) is before  # nothing changed: the same answer, kept
    rng = random.Random(0)
    for _ in range(40):
        env.step({a: rng.choice([x.id for x in env.available_actions(a)])
                  for a in env.agents if env.needs_decision(a)})
        assert set(p._explored_rooms(mem)) == _plain_explored(mem)
    other = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=4)
    other.reset(seed=2)  # another memory at the same version: derived for it
    assert set(p._explored_rooms(other.memory("agent_0"))) == \
        _plain_explored(other.memory("agent_0"))


def _studio_progress_checked(seed: int) -> set[tuple[int, ...]]:
    """Plays the studio with 4 planners to the end, checking every planner's wanted
    classes against the plain set each round; returns the progress values seen."""
    org = load_organization("shared")
    env = HighLevelEnv(layout="studio", task="prepare_afternoon_tea", num_agents=4)
    seen = set()

    def on_round(r, lines):
        view = runner.state.view
        goal, progress = view.world.scene.goal, view.world.progress
        plain = {g.cls for g, have in zip(goal, progress) if have < g.count}
        for member in runner.state.members.values():
            assert member.planner._wanted_classes(view) == plain
        seen.add(tuple(progress))

    runner = TeamRunner(env, org, build_team("planner", 4, org), max_rounds=60,
                        on_round=on_round)
    assert runner.run(seed=seed).summary.success
    return seen


def test_the_wanted_classes_follow_the_progress_and_the_goal():
    """Kept once for a team's goal and progress: derived again as objects are placed
    (the studio's planners finish the task) and in another episode (another goal)."""
    assert len(_studio_progress_checked(0)) > 2  # the progress changed as it went
    assert len(_studio_progress_checked(1)) > 2


def test_rooms_to_report_explored_are_those_a_scan_of_every_room_finds():
    """A member under a leader reports each room it has explored once: the rooms it
    keeps as seen and not reported give what asking every room of the house gave, as
    random walkers see rooms and open containers, with calls skipped for a while (several
    rooms at once) and the planner moved to other memories and back."""
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=6)
    env.reset(seed=3)
    rng = random.Random(3)
    planners = [PlannerAgent(a) for a in env.agents]
    reported = []
    for _ in range(150):
        env.step({a: rng.choice([x.id for x in env.available_actions(a)])
                  for a in env.agents if env.needs_decision(a)})
        for p in planners:
            if rng.random() < 0.3:
                continue  # not asked this tick: what it learns is found at the next call
            agent = p.agent_id if rng.random() < 0.9 else rng.choice(env.agents)
            mem = env.memory(agent)
            plain = [r for r in mem.rooms if r not in p._rooms_reported
                     and r in mem.rooms_seen and mem.room_explored(r)]
            done = p._explored_unreported(mem)
            assert done == plain
            p._rooms_reported.update(done)  # as _announce does
            reported.append(len(done))
    assert sum(reported) > 30 and max(reported) > 1  # rooms were reported, some together


def test_room_distances_kept_for_a_team_follow_the_house_asked_about():
    """The rooms' distance maps are kept once for whichever house was asked last: two
    episodes in other houses asked in turn each get their own house's nearest room."""
    envs = [HighLevelEnv(layout=layout, task="prepare_afternoon_tea", num_agents=3)
            for layout in ("generated:32:0", "studio", "generated:12:1")]
    rng = random.Random(5)
    for env in envs:
        env.reset(seed=0)
    planners = {id(env): PlannerAgent("agent_1") for env in envs}
    switches, last = 0, None
    for _ in range(60):
        env = rng.choice(envs)
        switches, last = switches + (last is not env), env
        env.step({a: rng.choice([x.id for x in env.available_actions(a)])
                  for a in env.agents if env.needs_decision(a)})
        rooms = rng.sample(list(env.world.scene.layout.rooms),
                           rng.randint(1, len(env.world.scene.layout.rooms)))
        agent = rng.choice(env.agents)
        here = env.world.agent_pos[env.agent_index[agent]]
        order, nav = env.world.scene.layout.rooms, env.nav
        plain = min(rooms, key=lambda r: (nav.distance(here, nav.room_goal(order.index(r))), r))
        assert planners[id(env)]._nearest_room(env, agent, rooms) == plain
    assert switches > 20  # the houses were asked in turn, not one after another


def _plain_room_order(p: PlannerAgent, env, agent: str, ended: str | None) -> str | None:
    mem = env.memory(p.agent_id)
    taken = {k[len(ROOM):] for k, who in p.assigned.items()
             if k.startswith(ROOM) and who != agent}
    taken |= {r for a, r in p.room_claims.items() if a != agent}
    rooms = [r for r in mem.rooms if r not in taken and r != ended
             and not lead_module.room_explored(p, env, r)]
    if not rooms:
        return None
    order, nav = env.world.scene.layout.rooms, env.nav
    here = env.world.agent_pos[env.agent_index[agent]]
    return min(rooms, key=lambda r: (nav.distance(here, nav.room_goal(order.index(r))), r))


def _plain_lead(p: PlannerAgent, env, reach: list[str]) -> None:
    """lead() as it was: each order's rooms taken and explored asked of every claim and
    every room."""
    ended = lead_module.free_stale(p, env)
    tick = env.world.tick
    mem = env.memory(p.agent_id)
    team = [a for a in env.agents if a != p.agent_id and env.needs_decision(a) and a in reach]
    carried = lead_module._carried(env)
    for agent in team:
        held = lead_module._held(env, agent)
        obj = lead_module._grab_order(p, env, agent, carried) if len(held) < 2 else None
        if obj is not None:
            p.assigned[obj], p.assigned_at[obj] = agent, tick
            b = mem.objects[obj]
            p._say("assign", (agent,), agent=agent, action=f"grab:{obj}",
                   target=p._target_of(env, obj), location=b.location, tick=b.tick)
            lead_module._tell_peers(p, object=obj, target=p._target_of(env, obj), tick=tick,
                                    **{"for": agent})
            continue
        room = None if held else _plain_room_order(p, env, agent, ended.get(agent))
        if room is not None:
            p.assigned[ROOM + room], p.assigned_at[ROOM + room] = agent, tick
            p._say("assign", (agent,), agent=agent, action=f"explore:{room}")
            lead_module._tell_peers(p, room=room, **{"for": agent})


@pytest.mark.parametrize("org_name", ["leader", "dual_leader"])
def test_a_leaders_orders_are_those_of_the_plain_code_in_episodes_and_shaken_claims(
        org_name, monkeypatch):
    """Each round the leader orders its reports twice from the same state, through the
    plain code and through lead() (rooms claimed counted once, rooms explored asked once
    per round), the second time with random teammates' room claims added (several on one
    room, the ordered agent's own among them); the orders and all it keeps agree."""
    org = load_organization(org_name)
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=24)
    rng = random.Random(f"lead-{org_name}")
    real_lead = planner_module.lead
    compared = []

    def state(p):
        return (dict(p.assigned), dict(p.assigned_at), list(p._outbox), dict(p.room_claims))

    def checked_lead(p, view, reach=None):
        for shaken in (False, True):
            saved = state(p)
            if shaken:
                rooms = list(view.memory(p.agent_id).rooms)
                for a in rng.sample(list(view.agents), rng.randint(1, len(view.agents))):
                    p.room_claims[a] = rng.choice(rooms[:6])  # collisions on a few rooms
            before = state(p)
            _plain_lead(p, view, list(reach or view.agents))
            plain = state(p)
            p.assigned, p.assigned_at, p._outbox, p.room_claims = (
                dict(before[0]), dict(before[1]), list(before[2]), dict(before[3]))
            real_lead(p, view, reach)
            assert state(p) == plain
            compared.append(len(plain[2]) - len(before[2]))
            if shaken:  # back to the episode's own state, then its real orders
                p.assigned, p.assigned_at, p._outbox, p.room_claims = saved
        real_lead(p, view, reach)

    monkeypatch.setattr(planner_module, "lead", checked_lead)
    runner = TeamRunner(env, org, build_team("planner", 24, org), max_rounds=12)
    runner.run(seed=0)
    assert len(compared) > 10 and sum(compared) > 20  # rounds with orders were compared


def test_whether_a_planner_is_useful_is_what_the_units_left_say():
    """An abstaining planner asks only whether any goal unit is left for it: on random
    claims, orders and placed objects (mostly of the goal's classes, so that every unit
    is often covered), it answers as the plain count of the units left does."""
    env = HighLevelEnv(layout="generated:32:0", task="prepare_afternoon_tea", num_agents=8)
    env.reset(seed=2)
    rng = random.Random(11)
    scene = env.world.scene
    goal_classes = {g.cls for g in scene.goal}
    wanted = [o for o in scene.objects if o.rpartition("_")[0] in goal_classes]
    answers = []
    for _ in range(600):
        p = PlannerAgent(rng.choice(env.agents))
        pool = wanted if rng.random() < 0.9 else list(scene.objects)
        for _ in range(rng.randint(0, 14)):
            p.claims[rng.choice(pool)] = (rng.choice(env.agents), rng.randint(0, 9))
        for _ in range(rng.randint(0, 5)):
            key = rng.choice([rng.choice(pool), ROOM + rng.choice(scene.layout.rooms)])
            p.assigned[key] = rng.choice(env.agents)
        for _ in range(rng.randint(0, 3)):
            p._placed.add(rng.choice(pool))
        plain = any(n > 0 for n in _plain_remaining(p, env).values())
        assert p._useful(env) == plain
        answers.append(plain)
    assert answers.count(True) > 50 and answers.count(False) > 50


def _plain_receive(p: PlannerAgent, messages) -> None:
    """What a planner records of statuses and claims, read from each message's content
    by each reader, as it was before messages kept their reading for all readers."""
    me = p.agent_id
    for m in messages:
        if m.sender == me or (m.receivers != "everyone" and me not in m.receivers):
            continue
        c = m.content
        if m.kind == "status":
            doing, _, target = str(c.get("doing", "")).partition(":")
            if doing == "grab":
                p.intents[m.sender] = target
            else:
                p.intents.pop(m.sender, None)
        elif m.kind == "claim":
            by = str(c.get("for") or c.get("by") or m.sender)
            if "object" in c:
                tick, obj = int(c.get("tick", 0)), c["object"]
                mine = p.claims.get(obj)
                if mine is None or mine[0] != me or \
                        (tick, planner_module._index(by)) < (mine[1], planner_module._index(me)):
                    p.claims[obj] = (by, tick)
            elif "room" in c:
                p.room_claims[by] = c["room"]


@pytest.mark.parametrize("seed", range(20))
def test_statuses_and_claims_are_recorded_as_the_plain_reading_of_their_content(seed):
    """Random statuses and claims (its own, relayed ``for`` another, untimed, rooms,
    neither, to others only, repeats) are recorded as reading each message's content
    reader by reader records them, by several readers of the same messages."""
    from orgteams.agents.messages import EVERYONE, TeamMessage

    rng = random.Random(seed)
    team = [f"agent_{i}" for i in range(5)]
    fast = [PlannerAgent(a) for a in team]
    plain = [PlannerAgent(a) for a in team]
    for _ in range(30):
        said = []
        for _ in range(rng.randrange(12)):
            sender = rng.choice(team)
            to = rng.choice([EVERYONE, EVERYONE, tuple(rng.sample(team, 2))])
            if rng.random() < 0.5:
                content = {"doing": rng.choice(["grab:cup_1", "grab:cup_2", "wait",
                                                "explore:hall", "grab"]), "holding": ()}
                said.append(TeamMessage.structured(sender, to, "status", content))
                continue
            content = rng.choice([{"object": rng.choice(["cup_1", "cup_2"]),
                                   "tick": rng.randrange(4)},
                                  {"object": "cup_1"}, {"room": rng.choice(["hall", "den"])},
                                  {}])
            if rng.random() < 0.3:
                content["for"] = rng.choice(team)
            said.append(TeamMessage.structured(sender, to, "claim", content))
        said += rng.sample(said, len(said) // 3)  # the same messages again
        for f, p in zip(fast, plain):
            f.receive(said)
            _plain_receive(p, said)
            assert (f.intents, f.claims, f.room_claims) == (p.intents, p.claims, p.room_claims)


def _tables(p: PlannerAgent) -> tuple:
    """What a planner took in, its tables' order included."""
    return (list(p.intents.items()), list(p.claims.items()), list(p.room_claims.items()),
            list(p.assigned.items()), sorted(p.explored), dict(p.found_by),
            dict(p.placed_by), [id(m) for m in p._heard], p.assignment, p.assigner,
            [(m.kind, m.receivers, dict(m.content)) for m in p._outbox])


def _hand_alike(fast: list, plain: list, said: list, rng: random.Random):
    """Hands ``said`` as one shared list to each of ``fast`` (or, now and then, that list
    less a reader's own) and a copy to its twin in ``plain``; their tables must agree
    after each reader. Returns the shared list."""
    from orgteams.agents.messages import Handed

    handed = Handed(said)
    for f, p in zip(fast, plain):
        me = f.agent_id
        if rng.random() < 0.5 and any(m.sender == me for m in said):
            f.receive(Handed.less([m for m in said if m.sender != me], handed, me))
        else:
            f.receive(handed)
        p.receive(list(said))
        assert _tables(f) == _tables(p)
        f._outbox.clear()
        p._outbox.clear()
    return handed


@pytest.mark.parametrize("seed", range(30))
def test_a_list_handed_alike_to_many_is_taken_in_as_each_copy_is(seed, monkeypatch):
    """Readers handed one :class:`Handed` list, or that list less their own messages
    (its statuses and room claims taken in from an intake derived once,
    :mod:`~orgteams.agents.planner.intake`) record what readers handed their own plain
    copy record, their tables' order included: with senders among the readers (handed
    the list whole, or less their own), statuses said twice, rooms released, messages
    to some only, claims relayed ``for`` another, reports, orders and corrections."""
    from orgteams.agents.member_rules import MemberRules
    from orgteams.agents.messages import EVERYONE, TeamMessage
    from orgteams.agents.planner import intake

    shared = []  # the intakes readers took in
    intake_of = intake.shared_intake
    monkeypatch.setattr(intake, "shared_intake",
                        lambda messages: shared.append(intake_of(messages)) or shared[-1])
    rng = random.Random(seed)
    team = [f"agent_{i}" for i in range(6)]
    fast = [PlannerAgent(a) for a in team]
    plain = [PlannerAgent(a) for a in team]
    for f, p in zip(fast, plain):  # a leader relaying its reports' reports to its peer
        if f.agent_id == "agent_0":
            f.rules = MemberRules(assign_work="leader", reports=("agent_2", "agent_3"),
                                  peers=("agent_1",))
            p.rules = MemberRules(assign_work="leader", reports=("agent_2", "agent_3"),
                                  peers=("agent_1",))
    rare = seed % 3  # 0: no release, room or to some only; else now and then
    for _ in range(25):
        said = []
        for _ in range(rng.randrange(15)):
            sender = rng.choice(team[:4] if rng.random() < 0.4 else ["agent_4", "agent_5"]
                                + [f"x_{i}" for i in range(4)])
            to = EVERYONE if not rare or rng.random() < 0.9 else tuple(rng.sample(team, 2))
            kind = rng.choice(["status"] * 4 + ["claim"] * 4 + ["found", "done", "release",
                                                                "assign", "correct"])
            obj = rng.choice(["cup_1", "cup_2", "mug_1"])
            room = rng.choice(["hall", "den", "kitchen"])
            content = {
                "status": {"doing": rng.choice(["grab:cup_1", "grab:mug_1", "wait",
                                                "explore:hall"]), "holding": ()},
                "claim": rng.choice([{"object": obj, "tick": rng.randrange(4)},
                                     {"room": room}, {"room": room}, {}]),
                "found": {"object": obj, "location": "table_0"},
                "done": rng.choice([{"object": obj, "location": "table_0"}, {"room": room}]),
                "release": {"object": obj} if not rare or rng.random() < 0.7 else
                {"room": room},
                "assign": {"agent": rng.choice(team), "action": f"grab:{obj}"},
                "correct": {"agent": rng.choice(team), "action": f"explore:{room}"},
            }[kind]
            if kind == "claim" and rng.random() < 0.2:
                content["for"] = rng.choice(team)
            said.append(TeamMessage.structured(sender, to, kind, content))
        if rng.random() < 0.3:
            said += rng.sample(said, len(said) // 3)  # some said twice
        handed = _hand_alike(fast, plain, said, rng)
    assert any(shared)  # some were taken in from an intake
    with pytest.raises(TypeError, match="shared by its readers"):
        handed.append(said[0] if said else None)


@pytest.mark.parametrize("seed", range(20))
def test_found_reports_handed_alike_to_many_are_taken_in_as_each_copy_is(seed, monkeypatch):
    """Lists of mostly found reports (relayed ``by`` a leader, without a location, to
    some only now and then, among statuses and now and then a done report), handed
    alike to many readers (some among their senders, some relaying their reports'
    reports): their counts and notes are taken in as reading each copy one by one."""
    from orgteams.agents.member_rules import MemberRules
    from orgteams.agents.messages import EVERYONE, TeamMessage
    from orgteams.agents.planner import intake

    taken = []  # the intakes whose found reports readers took in
    take_in = intake.take_in
    monkeypatch.setattr(planner_module, "take_in", lambda *a: (
        taken.append(a[4] is not None) or take_in(*a)))
    rng = random.Random(seed)
    team = [f"agent_{i}" for i in range(6)]
    fast = [PlannerAgent(a) for a in team]
    plain = [PlannerAgent(a) for a in team]
    for f, p in zip(fast, plain):
        if f.agent_id == "agent_0":
            for q in (f, p):
                q.rules = MemberRules(assign_work="leader", reports=("agent_2", "agent_3"),
                                      peers=("agent_1",))
    for _ in range(25):
        said = []
        for _ in range(rng.randrange(12)):
            sender = rng.choice(team + ["x_0", "x_1"])
            to = EVERYONE if rng.random() < 0.95 else tuple(rng.sample(team, 2))
            kind = rng.choice(["found"] * 6 + ["status"] * 3 + ["done"])
            obj = rng.choice(["cup_1", "cup_2", "mug_1"])
            content = {
                "found": rng.choice([{"object": obj, "location": "table_0", "tick": 2},
                                     {"object": obj, "location": "fridge", "by": "agent_2"},
                                     {"object": obj, "location": "table_0"}]),
                "status": {"doing": rng.choice(["grab:cup_1", "wait"]), "holding": ()},
                "done": {"object": obj, "location": "table_0"},
            }[kind]
            m = TeamMessage.structured(sender, to, kind, content)
            if kind == "found" and rng.random() < 0.1:  # no location: counted, not noted
                m = TeamMessage(sender, to, "seen", kind, content={"object": obj})
            said.append(m)
        if rng.random() < 0.3:
            said += rng.sample(said, len(said) // 3)  # some said twice
        _hand_alike(fast, plain, said, rng)
        for f, p in zip(fast, plain):  # found reports counted in their order too
            assert list(f.found_by.items()) == list(p.found_by.items())
    assert any(taken)
