"""The interface every team member implements (LLM, planner, human, random).

A team runner drives members through decision rounds (DESIGN.md, "Time"): in the
communicate phase it calls :meth:`TeamMember.communicate` with a
:class:`CommunicateContext` (what the organization and protocol allow this agent now),
delivers the resulting messages with :meth:`TeamMember.receive`, and in the act phase
calls :meth:`TeamMember.act`. Every decision carries a
:class:`~orgteams.agents.records.DecisionRecord` for the step log: the prompt, the raw
replies, the parsed reply, any fallback and its reason, token usage and latency.
Members of different kinds can therefore be mixed in a team.

:class:`DialogueLog` is the shared memory of what a member heard, said and did; the
belief of where things are lives in the env (``env.memory(agent)``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from orgteams.agents.llm.quoting import quote_text
from orgteams.agents.member_rules import MemberRules
from orgteams.agents.messages import EVERYONE, TeamMessage
from orgteams.agents.records import DecisionRecord
from orgteams.envs.highlevel.space import ActionId

if TYPE_CHECKING:  # the env layer is imported lazily; agents only read from it
    from orgteams.agents.llm.tokens import Tokenizer
    from orgteams.agents.shared_context import SharedHistory
    from orgteams.agents.view import MemberView
    from orgteams.envs.highlevel.highlevel_env import HighLevelAction

__all__ = [
    "ActContext",
    "ActDecision",
    "CommunicateContext",
    "CommunicateDecision",
    "DecisionRecord",
    "DialogueLog",
    "DialogueMember",
    "MemberBase",
    "StageKind",
    "TeamMember",
    "TeamMessage",
    "safe_action",
]

StageKind = Literal["message", "intention", "claim", "vote", "plan"]


@dataclass
class _Who:
    """Who decides, when, and what the organization says to it (both contexts start so).

    Attributes:
        round: The decision round.
        agent: The deciding agent id.
        name: Its display name.
        team: Agent id -> display name, every member (the agent included).
        instruction: The organization's rendered instruction ("" for ``none``).
        role: Its assigned or granted role, or None.
    """

    round: int
    agent: str
    name: str
    team: dict[str, str]
    instruction: str = ""
    role: str | None = None


@dataclass
class ActContext(_Who):
    """What the runner tells an agent for its act phase: who it is (the fields of
    :class:`CommunicateContext` up to ``role``) and whether it abstained this round
    (then it should wait).

    Attributes:
        visible_this_round: This round's outputs it may see when it acts (under
            ``sequential``: earlier agents' turns and chosen actions, kind ``action``).
        history: The shared history under ``shared`` (else None); see
            :mod:`~orgteams.agents.shared_context`.
    """

    abstained: bool = False
    visible_this_round: list[TeamMessage] = field(default_factory=list)
    history: SharedHistory | None = None


@dataclass
class CommunicateContext(_Who):
    """What the runner tells an agent for one communicate-phase stage.

    Attributes:
        round, agent, name, team, instruction, role: Who decides (see
            :class:`ActContext`); ``role`` is None when the agent chooses its own.
        allow_abstain: The agent may abstain from this round.
        self_chosen_roles: The agent chooses (or claims) its own role.
        can_message: Agent ids this agent may message, in team order (a tuple: the
            round loop gives every context of an agent the same one, kept until the
            organization is resolved anew; 255 names each at 256 agents).
        visible_this_round: Earlier turns of this round the protocol lets it see (a
            silent turn has empty ``text``; ``role`` and ``abstained`` say how the
            speaker stood).
        stage_kind: ``"message"``, ``"intention"``, ``"claim"``, ``"vote"`` or ``"plan"``.
        candidates: Agent ids that may be voted for (``stage_kind == "vote"``).
        removed: Agents a shock took out of the team: their claims and assignments
            lapse (they never act again).
        history: As in :class:`ActContext`.
        rules: The organization's rules for this agent (members without a model follow
            them; LLM members read them in ``instruction``).
        tokenizer: The episode's message tokenizer (its pool's): a member that counts
            message tokens (budgets) counts with it; None: the module default.
    """

    allow_abstain: bool = False
    self_chosen_roles: bool = False
    can_message: Sequence[str] = ()
    visible_this_round: list[TeamMessage] = field(default_factory=list)
    stage_kind: StageKind = "message"
    candidates: list[str] | None = None
    removed: tuple[str, ...] = ()
    history: SharedHistory | None = None
    rules: MemberRules = field(default_factory=MemberRules)
    tokenizer: Tokenizer | None = field(default=None, repr=False, compare=False)

    def count_tokens(self, text: str) -> int:
        """Tokens of one message text, with the episode's tokenizer (else the default)."""
        if self.tokenizer is None:
            from orgteams.agents.llm.tokens import count_tokens

            return count_tokens(text)
        return self.tokenizer.count(text)

    def act_context(self) -> ActContext:
        """The matching :class:`ActContext` (used when the runner gives none to ``act``)."""
        return ActContext(self.round, self.agent, self.name, dict(self.team),
                          self.instruction, self.role,
                          visible_this_round=list(self.visible_this_round),
                          history=self.history)


@dataclass
class CommunicateDecision:
    """An agent's output for one communicate stage.

    Attributes:
        messages: What it sends (empty: silence); the round loop stamps their stage,
            role and delivered receivers.
        role: The role it chose or claims, or None.
        abstain: It abstains from this round.
        vote: The agent id it votes for (vote stages), or None.
        thoughts: Its stated reasoning (logged, never sent).
        record: The decision record.
    """

    messages: list[TeamMessage]
    role: str | None
    abstain: bool
    vote: str | None
    thoughts: str
    record: DecisionRecord

    @property
    def silent(self) -> bool:
        """Nothing is sent."""
        return not self.messages


@dataclass
class ActDecision:
    """An agent's high-level action for this round.

    Attributes:
        action_id: The chosen :class:`~orgteams.envs.highlevel.space.ActionId` (a plain
            ``str`` id a member returns is made one here: the round loop, the log and
            the env take it as it is).
        thoughts: Its stated reasoning (logged).
        record: The decision record.
    """

    action_id: ActionId
    thoughts: str
    record: DecisionRecord

    def __post_init__(self) -> None:
        if not isinstance(self.action_id, ActionId):
            self.action_id = ActionId(self.action_id)


@runtime_checkable
class TeamMember(Protocol):
    """A team member of any kind; the round loop uses exactly these attributes.

    Attributes:
        agent_id: The agent it plays.
        model: What decides ("planner", "human", a model name...), for records.
        acts_every_round: Asked to act every round, not only when its plan ended
            (planners may drop a plan a teammate claimed first).
        backend: Its chat backend, whose async client the episode closes, or None.
        settings: Its model settings for the summary (``llm_settings``), or None.

    :class:`MemberBase` gives the defaults of all but ``communicate`` and ``act``. The
    ``env`` a member is given is a :class:`~orgteams.agents.view.MemberView`:
    read-only queries (its description, memory, available actions, progress), not the env.
    """

    agent_id: str
    model: str
    acts_every_round: bool
    backend: Any
    settings: Any

    def set_leader(self, leader: bool) -> None:
        """Leadership changed (elections, hand-overs): ``leader`` says whether it leads."""

    def reset(self) -> None:
        """Forget the last episode (dialogue and action history)."""

    def observe(self, env: MemberView) -> None:
        """Update internal state from the env after a step (belief is ``env.memory(agent)``)."""

    def receive(self, messages: list[TeamMessage]) -> None:
        """Hear messages delivered to this agent."""

    async def communicate(self, ctx: CommunicateContext, env: MemberView) -> CommunicateDecision:
        """Decide what to say (or vote, claim, abstain) in one communicate stage."""

    async def act(
        self, env: MemberView, round: int, ctx: ActContext | None = None
    ) -> ActDecision:
        """Pick one of ``env.available_actions(agent_id)`` by id."""


def safe_action(actions: list[HighLevelAction]) -> tuple[ActionId, str | None]:
    """The declared safe action, the one fallback rule: ``continue`` when busy, else ``wait``.

    Returns:
        ``(action_id, note)``; ``note`` says so when neither is offered (``wait`` is
        returned anyway: the env treats it as standing still).
    """
    ids = [a.id for a in actions]
    for candidate in ("continue", "wait"):
        if candidate in ids:
            return ActionId(candidate), None
    return ActionId("wait"), f"'wait' is not among the available actions {ids}"


class MemberBase:
    """Defaults of :class:`TeamMember` for members that need no more: no backend, acts
    only when its plan ended, ignores leadership, keeps nothing between episodes."""

    agent_id: str
    model: str = ""
    acts_every_round: bool = False
    backend: Any = None
    settings: Any = None
    # Its communicate and act never await (nothing to wait for: no model, no person):
    # the round loop runs their calls one after another instead of a task each.
    decides_at_once: bool = False

    def set_leader(self, leader: bool) -> None:
        """Leadership does not change what it does."""

    def reset(self) -> None:
        """Nothing to forget."""

    def observe(self, env: MemberView) -> None:
        """Nothing to copy: the situation is read from the env when deciding."""

    def receive(self, messages: list[TeamMessage]) -> None:
        """Ignores messages."""


class DialogueLog:
    """What a member heard and said, and the actions it took, in bounded windows.

    Args:
        dialogue_window: How many latest messages to keep (the paper: 12).
        action_window: How many latest own actions to keep (the paper: 20).
    """

    def __init__(self, dialogue_window: int = 12, action_window: int = 20) -> None:
        if dialogue_window < 0 or action_window < 0:
            raise ValueError(
                f"windows must be >= 0, got dialogue_window={dialogue_window}, "
                f"action_window={action_window}"
            )
        self.dialogue: deque[TeamMessage] = deque(maxlen=dialogue_window)
        self.actions: deque[tuple[int, str]] = deque(maxlen=action_window)

    def clear(self) -> None:
        """Forget everything."""
        self.dialogue.clear()
        self.actions.clear()

    def heard(self, messages: list[TeamMessage]) -> None:
        """Remember delivered messages."""
        self.dialogue.extend(messages)

    def said(self, messages: list[TeamMessage]) -> None:
        """Remember what this agent sent."""
        self.dialogue.extend(messages)

    def acted(self, round: int, label: str) -> None:
        """Remember an action taken (its label, e.g. ``[goexplore] <kitchen>``)."""
        self.actions.append((round, label))

    def dialogue_lines(self, names: dict[str, str], me: str) -> list[str]:
        """``Round 3, Alice to Bob, Charlie: "text"`` per remembered message, oldest first.

        The text is quoted (:func:`~orgteams.agents.llm.quoting.quote_text`): one line, so a
        message cannot forge another message's line or a prompt header."""
        def label(agent: str) -> str:
            return "you" if agent == me else names.get(agent, agent)

        lines = []
        for e in self.dialogue:
            to = EVERYONE if e.receivers == EVERYONE else ", ".join(map(label, e.receivers))
            lines.append(f"Round {e.round}, {label(e.sender)} to {to}: {quote_text(e.text)}")
        return lines

    def action_lines(self) -> list[str]:
        """``Round 2: [goexplore] <kitchen>`` per remembered action, oldest first."""
        return [f"Round {r}: {label}" for r, label in self.actions]


class DialogueMember(MemberBase):
    """Shared bookkeeping of members that keep a :class:`DialogueLog` (LLM and human).

    Subclasses set ``agent_id``, ``log`` and ``_context`` (the latest
    :class:`ActContext`, reused when ``act`` is called without one).
    """

    agent_id: str
    log: DialogueLog
    _context: ActContext | None

    def reset(self) -> None:
        """Forget the dialogue and action history of the last episode."""
        self.log.clear()
        self._context = None

    def receive(self, messages: list[TeamMessage]) -> None:
        """Remember delivered messages (its own are remembered when sent)."""
        self.log.heard([m for m in messages if m.sender != self.agent_id])
