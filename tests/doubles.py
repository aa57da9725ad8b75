"""Test doubles shared by the test modules: stand-ins for the env, contexts, members,
model replies and scripts. A double a second test file needs lives here, once.

* :class:`FakeEnv`: a tiny stand-in for the ``MemberView`` members read, with fixed
  text; :func:`comm_ctx`.
* Members for the round loop: :class:`Talker` (says fixed lines to everyone),
  :class:`Tracer` (a Talker that writes every call into a shared trace),
  :class:`Recorder` (remembers what it saw, acts by a rule), :class:`SlowMember`.
* Model replies: :func:`fill_reply` (a reply to any decision schema).
* ``orgteams.run.build_member`` replaced: :func:`scripted_teammates`, :func:`slow_teammates`.
* :func:`load_script`: a benchmark, example or CI script (not in a package) as a module.
* :func:`free_direction`: where the keyboard player can step.
* :func:`log_dicts`, :func:`records_of`, :func:`read_dicts`: episode-log lines as the
  JSON objects the log holds (tests assert what was written).
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from orgteams.agents import CommunicateContext, LLMAgent, ScriptedBackend
from orgteams.agents.member import (
    ActDecision,
    CommunicateDecision,
    DecisionRecord,
    MemberBase,
    TeamMessage,
)
from orgteams.envs.core.layout import DIRECTIONS
from orgteams.envs.core.state import is_walkable
from orgteams.envs.highlevel.space import ActionId
from orgteams.organizations.rounds.episode_log import line_dict, read_log

TEAM = {"agent_0": "Alice", "agent_1": "Bob", "agent_2": "Charlie"}


@dataclass(frozen=True)
class FakeAction:
    id: ActionId
    kind: str
    target: str
    label: str


ACTIONS = [
    FakeAction(ActionId("explore:kitchen"), "explore", "kitchen", "[goexplore] <kitchen>"),
    FakeAction(ActionId("check:fridge"), "check", "fridge", "[gocheck] <fridge>"),
    FakeAction(ActionId("grab:cupcake_1"), "grab", "cupcake_1", "[gograb] <cupcake_1>"),
    FakeAction(ActionId("wait"), "wait", "", "[wait]"),
]


def log_dicts(lines: Any) -> list[dict]:
    """The JSON objects of episode-log lines (``EpisodeResult.records``, ``read_log``), as
    the log writes them."""
    return [line_dict(line) for line in lines]


def records_of(result: Any) -> list[dict]:
    """An episode result's decision and event lines as the JSON objects the log holds."""
    return log_dicts(result.records)


def read_dicts(path: Any) -> list[dict]:
    """The JSON objects of an episode log's lines, read with ``read_log``."""
    return log_dicts(read_log(path))


class FakeMemory:
    def render_text(self) -> str:
        return "Rooms seen: kitchen.\ncupcake_1: on kitchen_table."


class FakeEnv:
    """Satisfies the part of the MemberView contract that agents read."""

    def __init__(self, actions: list[FakeAction] | None = None) -> None:
        self.actions = list(ACTIONS if actions is None else actions)

    def describe(self, agent: str) -> str:
        return f"You are {agent}, in the kitchen. You hold: nothing."

    def describe_goal(self) -> str:
        return "ON(cupcake, coffee_table): 2 (1 done)"

    def progress(self) -> dict:
        return {"satisfied": [], "remaining": ["ON(cupcake, coffee_table): 2"],
                "units_done": 1, "units_total": 2}

    def memory(self, agent: str) -> FakeMemory:
        return FakeMemory()

    def available_actions(self, agent: str) -> list[FakeAction]:
        return list(self.actions)

    def needs_decision(self, agent: str) -> bool:
        return True


def comm_ctx(**changes) -> CommunicateContext:
    base = dict(round=3, agent="agent_0", name="Alice", team=dict(TEAM),
                instruction="Alice is the leader. Follow her orders.",
                can_message=["agent_1", "agent_2"])
    return CommunicateContext(**{**base, **changes})


def run(coro):
    return asyncio.run(coro)


def load_script(path: Path, name: str | None = None, *, register: bool = False) -> ModuleType:
    """The script at ``path`` (a benchmark, an example, a CI helper: not in a package) as a
    module named ``name`` (default: the file's stem). While it loads, its folder is first
    on ``sys.path``, as when it runs as a script (so it imports its neighbours).
    ``register``: also put it in ``sys.modules`` (dataclasses look their module up
    there); the caller removes it."""
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


# ---------------------------------------------------------------- members
class Talker(MemberBase):
    """Says ``texts`` to everyone at every stage and waits; ``{me}`` in a text is its id.

    It ignores ``can_message`` (any member kind could: a person, a model answering
    ``everyone``) and keeps no budget itself.
    """

    def __init__(self, agent_id: str, texts: tuple[str, ...] = ("hello all",),
                 model: str = "talker") -> None:
        self.agent_id, self.texts, self.model = agent_id, texts, model

    async def communicate(self, ctx, env):
        rec = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.model)
        said = [TeamMessage(self.agent_id, "everyone", t.format(me=self.agent_id))
                for t in self.texts]
        return CommunicateDecision(said, None, False, None, "", rec)

    async def act(self, env, round, ctx=None):
        return ActDecision("wait", "", DecisionRecord("act", self.agent_id, round))


class Tracer(Talker):
    """A Talker ("<id> here") that writes every call into the shared ``trace`` and keeps
    its contexts; acts by exploring a room (the n-th of the sorted ones, n its number)."""

    def __init__(self, agent_id: str, trace: list) -> None:
        super().__init__(agent_id, ("{me} here",), model="tracer")
        self.trace = trace
        self.comm, self.acts, self.heard = [], [], []

    def receive(self, messages):
        self.heard.append((len(self.trace), [m.sender for m in messages]))

    async def communicate(self, ctx, env):
        self.trace.append(("communicate", self.agent_id, ctx.round))
        self.comm.append(ctx)
        return await super().communicate(ctx, env)

    async def act(self, env, round, ctx=None):
        self.trace.append(("act", self.agent_id, round))
        self.acts.append(ctx)
        ids = [a.id for a in env.available_actions(self.agent_id)]
        rooms = sorted(i for i in ids if i.startswith("explore:"))
        action = rooms[int(self.agent_id[-1]) % len(rooms)] if rooms else "wait"
        return ActDecision(action, "", DecisionRecord("act", self.agent_id, round))


class Recorder(MemberBase):
    """A member that says who it is, remembers what it saw, and acts by a rule.

    Args:
        to: Who it says "hi from <id>" to.
        abstain: Abstains instead (says nothing).
        role: The role it claims.
        action: ``valid action ids -> the one it takes``; default: wait.
        vote: Its vote at vote stages.
        fail_round: The round whose communicate raises (a member that crashes).
    """

    model = "recorder"

    def __init__(self, agent_id, *, to="everyone", abstain=False, role=None, action=None,
                 vote=None, fail_round=None):
        self.agent_id, self.to, self.abstain, self.role = agent_id, to, abstain, role
        self.action, self.vote, self.fail_round = action, vote, fail_round
        self.seen: list[tuple[int, str, list[str]]] = []  # (round, stage kind, senders seen)
        self.heard: list[str] = []
        self.contexts = []
        self.act_contexts = []

    def reset(self):
        self.seen.clear()
        self.heard.clear()

    def receive(self, messages):
        self.heard += [f"{m.sender}:{m.text}" for m in messages]

    async def communicate(self, ctx, env):
        if self.fail_round is not None and ctx.round == self.fail_round:
            raise RuntimeError("member crashed")
        self.contexts.append(ctx)
        self.seen.append((ctx.round, ctx.stage_kind, [v.sender for v in
                                                      ctx.visible_this_round if v.text]))
        rec = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.model)
        vote = self.vote if ctx.stage_kind == "vote" else None
        msgs = [] if self.abstain else [TeamMessage(self.agent_id, self.to,
                                                    f"hi from {self.agent_id}")]
        return CommunicateDecision(msgs, self.role, self.abstain, vote, "", rec)

    async def act(self, env, round, ctx=None):
        self.act_contexts.append(ctx)
        rec = DecisionRecord("act", self.agent_id, round, model=self.model)
        valid = [a.id for a in env.available_actions(self.agent_id)]
        action = self.action(valid) if self.action else "wait"
        return ActDecision(action, "", rec)


class SlowMember(MemberBase):
    """A teammate that takes ``seconds`` to choose (an LLM that takes a while), then waits."""

    def __init__(self, agent_id: str, seconds: float) -> None:
        self.agent_id, self.seconds = agent_id, seconds

    async def act(self, env, round_, ctx):
        await asyncio.sleep(self.seconds)
        return SimpleNamespace(action_id="wait")


# ---------------------------------------------------------------- model replies
def fill_reply(schema: dict, **fields: Any) -> dict:
    """A reply to a decision schema: ``thoughts`` empty, then each of ``fields`` that the
    schema has, in the order given; ``action`` is an index into the action's enum."""
    props = schema["properties"]
    reply: dict[str, Any] = {"thoughts": ""}
    for name, value in fields.items():
        if name in props:
            reply[name] = props[name]["enum"][value] if name == "action" else value
    return reply


# ---------------------------------------------------------------- build_member replaced
def scripted_teammates(monkeypatch, say: str | None = None) -> dict[str, ScriptedBackend]:
    """LLM teammates on the scripted backend in place of ``orgteams.run.build_member``:
    each says ``say`` to everyone (``{agent}``: its id), or nothing when None, then picks
    option A. Returns their backends by agent (``backends[agent].calls``: the prompts)."""
    import orgteams.run as team

    backends: dict[str, ScriptedBackend] = {}

    def member(agent, spec, **kw):
        def reply(messages, schema):
            if "messages" in schema.get("properties", {}):
                said = [] if say is None else [{"receivers": ["everyone"],
                                                "message": say.format(agent=agent)}]
                return {"messages": said, "thoughts": ""}
            return {"action": "A", "thoughts": ""}

        backends[agent] = ScriptedBackend(reply)
        return LLMAgent(agent, backends[agent])

    monkeypatch.setattr(team, "build_member", member)
    return backends


def slow_teammates(monkeypatch, seconds: float) -> None:
    """Teammates that take ``seconds`` per choice, in place of ``orgteams.run.build_member``."""
    import orgteams.run as team

    monkeypatch.setattr(team, "build_member", lambda a, spec, **kw: SlowMember(a, seconds))


def free_direction(session) -> tuple[int, int]:
    """A direction the keyboard player of ``session`` can step in, and the cell it leads
    to (the test is skipped when the player is boxed in)."""
    state = session.raw.world
    pos = state.agent_pos[session.index]
    for d, (dr, dc) in enumerate(DIRECTIONS):
        cell = pos + dr * state.scene.width + dc
        if is_walkable(state, cell) and cell not in state.agent_pos:
            return d, cell
    pytest.skip("the human agent is boxed in at this seed")
