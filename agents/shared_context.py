"""What a protocol lets a member know besides messages, as data every member kind reads.

* **Chosen actions this round** (``sequential``): an earlier agent's completed output
  includes the high-level action it chose; it reaches later agents as a
  :class:`~orgteams.agents.messages.TeamMessage` of kind ``action`` in
  ``visible_this_round`` (content ``{"agent", "action"}``, text the action's label).
  It is public and is not a message: it is never delivered to inboxes and costs no
  message tokens.
* **Shared history** (``shared``): :class:`SharedHistory`, what the team did in
  earlier rounds of this episode (each agent's new action, role and abstention per
  round, the goal units done) and the patterns of the team's earlier episodes (success,
  ticks, each agent's most frequent role and action kinds). Bounded: the last
  :data:`HISTORY_ROUNDS` rounds and :data:`HISTORY_EPISODES` episodes.

Planner members turn both into the claims they already understand; LLM members see
them as quoted lines (:func:`chosen_lines`, :meth:`SharedHistory.lines`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from orgteams.agents.llm.quoting import one_line, quote_text
from orgteams.agents.messages import TeamMessage
from orgteams.envs.highlevel.space import ActionId

__all__ = ["HISTORY_EPISODES", "HISTORY_ROUNDS", "EpisodePattern", "RoundOutcome",
           "SharedHistory", "action_output", "as_claims", "chosen_lines"]

HISTORY_ROUNDS = 5
HISTORY_EPISODES = 3


def action_output(agent: str, action_id: ActionId, label: str, round: int, stage: int
                  ) -> TeamMessage:
    """An agent's chosen action as a public output of this round (kind ``action``):
    ``TeamMessage(agent, "everyone", label, "action", round=round, stage=stage,
    content={"agent": agent, "action": action_id})``, made unchecked (its kind and
    receivers are valid; the checked constructor cost 6 us, and a sequential round
    says one per decider)."""
    return TeamMessage.unchecked(agent, "everyone", label, "action", round, stage,
                                 {"agent": agent, "action": action_id}, None, None, False)


def chosen_lines(visible: Sequence[TeamMessage], team: Mapping[str, str], me: str
                 ) -> list[str]:
    """``Alice chose "[gograb] <cupcake_1>"`` per earlier agent's chosen action (quoted)."""
    return [f"{'You' if m.sender == me else team.get(m.sender, m.sender)} chose "
            f"{quote_text(m.text)}" for m in visible if m.kind == "action"]


@dataclass(frozen=True)
class RoundOutcome:
    """One earlier round: new actions (id), roles and abstentions, units done after it,
    and the tick its actions started at."""

    round: int
    actions: dict[str, ActionId]
    roles: dict[str, str] = field(default_factory=dict)
    abstained: tuple[str, ...] = ()
    units_done: int = 0
    tick: int = 0


@dataclass(frozen=True)
class EpisodePattern:
    """One earlier episode of the team, summarized."""

    success: bool
    ticks: int
    roles: dict[str, str] = field(default_factory=dict)
    action_kinds: dict[str, dict[str, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, success: bool, ticks: int, rounds: Sequence[RoundOutcome]) -> EpisodePattern:
        """The pattern of an episode from all its rounds."""
        kinds: dict[str, Counter] = {}
        roles: dict[str, Counter] = {}
        for r in rounds:
            for agent, action in r.actions.items():
                kinds.setdefault(agent, Counter())[ActionId(action).kind] += 1
            for agent, role in r.roles.items():
                roles.setdefault(agent, Counter())[role] += 1
        return cls(success, ticks, {a: c.most_common(1)[0][0] for a, c in roles.items()},
                   {a: dict(c.most_common()) for a, c in kinds.items()})


@dataclass(frozen=True)
class SharedHistory:
    """What everyone may know of the past under ``shared`` (see the module docstring)."""

    rounds: tuple[RoundOutcome, ...] = ()
    episodes: tuple[EpisodePattern, ...] = ()

    def latest_actions(self) -> dict[str, ActionId]:
        """Each agent's most recent new action id in the remembered rounds."""
        out: dict[str, str] = {}
        for r in self.rounds:
            out.update(r.actions)
        return out


    def lines(self, team: Mapping[str, str], me: str) -> list[str]:
        """The history as prompt lines; roles and labels are quoted model/env text."""
        def who(a: str) -> str:
            return "you" if a == me else team.get(a, a)

        out = []
        for r in self.rounds:
            parts = [f"{who(a)} {quote_text(_label(act))}"
                     + (f" as {quote_text(one_line(r.roles[a]))}" if a in r.roles else "")
                     for a, act in r.actions.items()]
            parts += [f"{who(a)} abstained" for a in r.abstained]
            out.append(f"Round {r.round}: " + ("; ".join(parts) or "no new actions")
                       + f". Goal units done after it: {r.units_done}.")
        for i, e in enumerate(self.episodes, 1):
            kinds = "; ".join(f"{who(a)} mostly {max(k, key=k.get)}"
                              for a, k in e.action_kinds.items() if k)
            roles = "; ".join(f"{who(a)} as {quote_text(one_line(r))}" for a, r in e.roles.items())
            out.append(f"Earlier episode {i}: {'success' if e.success else 'failure'} in "
                       f"{e.ticks} ticks" + (f"; {kinds}" if kinds else "")
                       + (f"; roles: {roles}" if roles else "") + ".")
        return out


def _label(action_id: str) -> str:
    """The label agents see in their options (``[gograb] <cupcake_1>``), else the id."""
    from orgteams.envs.highlevel.highlevel_env import LABELS, HighLevelAction

    action = ActionId(action_id)
    return (HighLevelAction.make(action.kind, action.target).label if action.kind in LABELS
            else action_id)


def as_claims(chosen: Mapping[str, ActionId], me: str, tick: int) -> list[TeamMessage]:
    """Other agents' chosen actions as the planner's ``claim`` messages (grab: the object,
    explore: the room; other kinds claim nothing)."""
    out = []
    for agent, action in chosen.items():
        action = ActionId(action)
        kind, target = action.kind, action.target
        if agent == me or not target:
            continue
        if kind == "grab":
            out.append(TeamMessage.structured(agent, "everyone", "claim",
                                              {"object": target, "tick": tick}))
        elif kind == "explore":
            out.append(TeamMessage.structured(agent, "everyone", "claim", {"room": target}))
    return out
