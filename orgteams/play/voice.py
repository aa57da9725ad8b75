"""The keyboard player's voice in ``orgteams play``: their lines, as a team member's turn.

What the player writes in the play window (T, see :mod:`orgteams.envs.play.chat`)
reaches teammates the way any member's message does: :class:`PlayerVoice` is the
player's agent as a :class:`~orgteams.agents.member.TeamMember` that speaks the
lines written since its last turn, and :func:`player_speaks` gives it a communicate
stage of its own at the teammates' next decision round, before they talk. The round
loop stamps, routes (along the organization's channels), records (the episode log,
``message_tokens`` counted) and delivers those messages as it does everyone's;
teammates held back by their protocol (``shared``: heard after acting) get them
right after that stage, so they read them before they next decide. LLM teammates
quote them in their prompts; planners read only structured messages (claims, found,
done...) and ignore free text.

The player never acts through the round loop: their keys step the env.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orgteams.agents.member import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    DecisionRecord,
    MemberBase,
    TeamMessage,
)
from orgteams.agents.messages import MESSAGE_MAX_CHARS
from orgteams.organizations.rounds.phases import communicate_phase, deliver_held

if TYPE_CHECKING:
    from orgteams.agents.view import MemberView
    from orgteams.organizations.rounds.episode import EpisodeState

__all__ = ["PlayerVoice", "player_speaks"]


class PlayerVoice(MemberBase):
    """The keyboard player as a team member that only talks.

    Args:
        agent_id: The player's agent.
    """

    model = "human"

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self.outbox: list[TeamMessage] = []
        self.sent = 0  # messages spoken so far (each episode's and all)

    def say(self, message: TeamMessage) -> None:
        """Keep ``message`` (the player's) for the next communicate stage."""
        if message.sender != self.agent_id:
            raise ValueError(f"PlayerVoice of {self.agent_id} got a message from "
                             f"{message.sender}")
        if len(message.text) > MESSAGE_MAX_CHARS:
            raise ValueError(f"A message has at most {MESSAGE_MAX_CHARS} characters; "
                             f"got {len(message.text)}.")
        self.outbox.append(message)

    def reset(self) -> None:
        """A new episode: lines written in the last one are not carried over."""
        self.outbox.clear()

    async def communicate(self, ctx: CommunicateContext, env: MemberView) -> CommunicateDecision:
        """Speak the lines written since the last turn (silence when there are none)."""
        record = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.model)
        said, self.outbox = self.outbox, []
        self.sent += len(said)
        record.parsed = {"messages": [m.text for m in said]}
        return CommunicateDecision(said, None, False, None, "", record)

    async def act(self, env: MemberView, round: int, ctx: ActContext | None = None
                  ) -> ActDecision:
        raise RuntimeError(f"the player {self.agent_id} acts with keys; the round loop "
                           "must not ask them for an action")


async def player_speaks(state: EpisodeState, voice: PlayerVoice) -> None:
    """The player's own communicate stage, when they wrote something; its messages are
    delivered before anyone decides (also under ``shared``)."""
    if not voice.outbox:
        return
    state.members[voice.agent_id] = voice
    try:
        await communicate_phase(state, speakers=[voice.agent_id])
        deliver_held(state)
    finally:
        del state.members[voice.agent_id]  # never asked to act
