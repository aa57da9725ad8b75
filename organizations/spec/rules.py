"""An organization's machine-readable rules: who assigns work, who reports what to whom.

The ``rules`` block of an organization file (:class:`Rules`) says how its members work
together, as data every member kind honours: planners follow it
(:class:`~orgteams.agents.member_rules.MemberRules` is what one member is told), LLM
agents read it as short text (:func:`rules_text`, our own sentences: a rule is data
and never a template), and the Criticize-Reflect Coordinator edits it.

=================  ===============================================================
rule               meaning
=================  ===============================================================
``assign_work``    ``leader``: the top leader(s) assign subgoals, members do them;
                   ``self``: everyone picks its own work and announces nothing;
                   ``claim``: everyone picks its own work and claims it first
                   (a claimed object or room is left to its claimer; two claims:
                   the earlier, then the lower agent index, wins)
``report_when``    ``every_round``: a status line each round (doing, holding);
                   ``on_new_information``: goal objects found and subgoals done;
                   ``on_completion``: only subgoals done; ``never``: no reports
``report_to``      ``leader`` (one's boss, else the top leader), ``neighbours``
                   (agents one's channels reach directly in the topology: boss,
                   reports, chain neighbours) or ``everyone``
``budget``         ``messages`` and/or ``tokens`` one member may send per round
                   (None: no cap); what is over the cap is not sent
``corrections``    members may correct the leader: a member told to do something
                   it knows is done, held or impossible says so (``correct``)
                   and does something useful; without it, it says nothing
``election``       how members vote (``vote``: ``progress``, ``round_robin``,
                   ``lowest_id``, ``random`` with ``seed``, ``self``) and when the
                   team re-elects (``reelect``: ``every`` ``election_every``
                   rounds, or ``once`` at the start); used with
                   ``leadership_rule: election``
``succession``     who takes over when a shock removes a member that holds a
                   seat (a leader, a chain link): ``next`` (its first report
                   in team order moves up into its seat, and that one's first
                   report into the one left, down the tiers; a chain closes
                   around the gap), ``elect`` (the team votes at once by
                   ``election``; a mid leader is succeeded as by ``next``)
                   or ``none`` (nobody: the seat stays with the removed member)
``in_prompt``      whether LLM members are told these rules (``none``: the
                   organized-teams paper's baseline tells its agents nothing)
``notes``          free-text rules, shown to LLM members as they are written
=================  ===============================================================

Abstention is the organization's ``allow_abstain`` (the self-organizing paper's
ring 1, human-only by default) and stays outside this block so a Coordinator editing
the rules cannot take the right to abstain away; the election's period is
``election_every``. Both are rendered with the rules.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from orgteams.errors import did_you_mean

__all__ = ["ASSIGN_WORK", "REPORT_TO", "REPORT_WHEN", "SUCCESSION", "VOTE_RULES", "Budget",
           "ElectionRule", "Rules", "rules_text"]

ASSIGN_WORK: tuple[str, ...] = ("leader", "self", "claim")
REPORT_WHEN: tuple[str, ...] = ("every_round", "on_completion", "on_new_information", "never")
REPORT_TO: tuple[str, ...] = ("leader", "neighbours", "everyone")
VOTE_RULES: tuple[str, ...] = ("progress", "round_robin", "lowest_id", "random", "self")
SUCCESSION: tuple[str, ...] = ("next", "elect", "none")
MAX_MESSAGES_PER_ROUND = 50
"""Largest per-member message budget an organization may declare."""
MAX_TOKENS_PER_ROUND = 5000
"""Largest per-member token budget an organization may declare."""
MAX_NOTES = 30
MAX_NOTE_CHARS = 300


class _Strict(BaseModel):
    """Strict, closed models: YAML ``"3"`` is not 3, unknown keys are named with a hint."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if key not in cls.model_fields:
                    hint = did_you_mean(str(key), cls.model_fields)
                    raise ValueError(f"unknown rule {key!r}.{hint} Known: "
                                     f"{', '.join(cls.model_fields)}")
        return data


class Budget(_Strict):
    """What one member may send per round (None: no cap)."""

    messages: int | None = Field(default=None, ge=0, le=MAX_MESSAGES_PER_ROUND)
    tokens: int | None = Field(default=None, ge=0, le=MAX_TOKENS_PER_ROUND)

    @property
    def capped(self) -> bool:
        """Whether any cap is set."""
        return self.messages is not None or self.tokens is not None


class ElectionRule(_Strict):
    """How members vote and when the team re-elects (with ``leadership_rule: election``)."""

    vote: Literal["progress", "round_robin", "lowest_id", "random", "self"] = "progress"
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    reelect: Literal["every", "once"] = "every"


class Rules(_Strict):
    """An organization's machine-readable rules (the module docstring has the table)."""

    assign_work: Literal["leader", "self", "claim"] = "claim"
    report_when: Literal["every_round", "on_completion", "on_new_information", "never"] = (
        "on_new_information")
    report_to: Literal["leader", "neighbours", "everyone"] = "everyone"
    budget: Budget = Field(default_factory=Budget)
    corrections: bool = False
    election: ElectionRule = Field(default_factory=ElectionRule)
    # "none" by default: an organization file that says nothing keeps the behaviour it
    # had before succession existed; the named organizations each declare theirs.
    succession: Literal["next", "elect", "none"] = "none"
    in_prompt: bool = True
    notes: tuple[str, ...] = Field(default=(), max_length=MAX_NOTES)

    @model_validator(mode="before")
    @classmethod
    def _notes_as_tuple(cls, data: Any) -> Any:
        # A list is the older free-text form (``rules: [..]``): its items are notes.
        if isinstance(data, list | tuple):
            data = {"notes": data}
        # YAML and JSON give lists; strict mode would refuse a list for a tuple.
        if isinstance(data, dict) and isinstance(data.get("notes"), list):
            data = {**data, "notes": tuple(data["notes"])}
        return data

    @model_validator(mode="after")
    def _short_notes(self) -> Rules:
        for i, note in enumerate(self.notes):
            if len(note) > MAX_NOTE_CHARS or len(note.splitlines()) > 1:
                raise ValueError(f"note {i} must be one line of at most {MAX_NOTE_CHARS} "
                                 "characters")
        return self


_ASSIGN = {
    "leader": "Work is assigned by the leader: do the subgoal the leader gives you; "
              "leaders assign each teammate a subgoal.",
    "self": "Choose your own work; nobody assigns it.",
    "claim": "Before you go for an object or a room, claim it; leave what a teammate "
             "claimed first to them.",
}
_WHEN = {
    "every_round": "Report your status (what you do and hold) every round",
    "on_new_information": "Report only new information (goal objects found, subgoals done)",
    "on_completion": "Report only when you complete a subgoal",
    "never": "Do not send reports",
}
_TO = {"leader": " to your leader.", "neighbours": " to your neighbours only.",
       "everyone": " to everyone."}
_VOTE = {
    "progress": "vote for the agent who has placed the most goal objects",
    "round_robin": "vote for the agent after the current leader in the team's order",
    "lowest_id": "vote for the first agent in the team's order",
    "random": "vote for any agent",
    "self": "vote for yourself",
}


def rules_text(rules: Rules, *, election_every: int | None = None,
               elections: bool = False, has_leader: bool = False,
               leads: bool = False) -> list[str]:
    """The rules as short sentences for an LLM member's prompt (only the notes unless
    ``in_prompt``).

    Args:
        rules: The rules.
        election_every: Rounds between elections (shown when ``elections``).
        elections: The organization elects its leader.
        has_leader: It has a leader (corrections are about the leader).
        leads: The reader is a top leader (its reports go to the agents it leads, and
            corrections come to it).
    """
    if not rules.in_prompt:
        return list(rules.notes)
    lines = [_ASSIGN[rules.assign_work]]
    when = _WHEN[rules.report_when]
    to = " to the agents you lead." if leads and rules.report_to == "leader" \
        else _TO[rules.report_to]
    lines.append(when + ("." if rules.report_when == "never" else to))
    b = rules.budget
    if b.capped:
        caps = [f"{b.messages} message{'s' if b.messages != 1 else ''}"
                if b.messages is not None else "",
                f"{b.tokens} tokens" if b.tokens is not None else ""]
        lines.append(f"Send at most {' and '.join(c for c in caps if c)} per round; "
                     "more is not delivered.")
    if has_leader and leads:
        lines.append("Teammates may correct your orders: accept a correction that states "
                     "a fact you missed." if rules.corrections
                     else "Teammates follow your orders as given.")
    elif has_leader:
        lines.append("You may correct the leader: if an order is wrong or unnecessary, say "
                     "what the leader missed." if rules.corrections
                     else "Follow the leader's orders without arguing.")
    if elections:
        e = rules.election
        when_e = ("once, at the start" if e.reelect == "once"
                  else f"every {election_every} rounds")
        lines.append(f"The team elects its leader {when_e}: {_VOTE[e.vote]}.")
    return [*lines, *rules.notes]
