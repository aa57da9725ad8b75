"""One round's communicate phase as pure data: stages, visibility, routing, claims, votes.

A round is a list of :class:`Stage`. Stages run in order; the speakers of one stage
run concurrently and never see each other's output of that stage. What a speaker sees
of *this* round is fixed by the stage's ``sees`` (:func:`visible_outputs`):

* ``all_prior``: every output of earlier stages delivered to it (or written by it).
* ``none_this_round``: nothing of this round, only the shared history of earlier rounds.
* ``intentions`` / ``plan`` / ``claims``: only earlier outputs of that kind.

Per protocol (``agents`` = the speakers of this round, in team order):

* ``free`` and ``sequential_messages``: one stage per agent, ``all_prior``, then everyone
  acts at once (``free`` delivers along channels).
* ``sequential`` (the self-organizing paper's): one stage per agent in team order, each
  ``acts``: the speaker decides its high-level action right after its turn, so agent
  ``i`` speaks and chooses with agents ``0..i-1``'s messages, claims and chosen actions
  (public outputs) known. The actions are then played from the same tick (one env step
  per round, the time model's decision round); within that tick the env resolves
  interactions in agent-index order and gives lower indexes right of way, and team
  order is index order, so an earlier agent's action also takes effect first.
* ``leader_first``: one stage per leader (top tier first), then one per other agent,
  ``all_prior``; members' corrections thus reach leaders before the act phase.
* ``coordinator``: the leaders' ``plan`` stage (``none_this_round``), then everyone else
  at once seeing only the ``plan``.
* ``broadcast``: everyone's ``intention`` at once (``none_this_round``), then everyone's
  ``message`` at once seeing all ``intentions``.
* ``shared``: everyone at once, ``none_this_round``; everyone then acts at once and this
  round's messages are delivered after the act phase (decisions from the shared history
  only, see :data:`~orgteams.organizations.protocols.facts.PROTOCOL_FACTS`).
* ``batched_sequential``: ``sequential`` in groups (the self-organizing paper's
  extension): groups of ``batch_size`` in team order, each ``all_prior`` and ``acts``;
  a group's members speak and choose their actions concurrently, seeing earlier
  groups' messages, claims and chosen actions, never their own group's.
* ``claim_shared``: everyone's ``claim`` at once (``none_this_round``), then everyone's
  ``message`` at once seeing the ``claims`` (settled by :func:`resolve_claims`).

With ``leadership_rule: election`` a ``vote`` stage of the whole team (secret ballot,
``none_this_round``) comes first whenever :func:`election_due`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from orgteams.agents.member import StageKind
from orgteams.agents.messages import EVERYONE, Broadcast, Heard, Receivers, TeamMessage
from orgteams.organizations.spec.resolved import ResolvedOrganization

Sees = Literal["all_prior", "none_this_round", "intentions", "plan", "claims"]
ABSTAIN = "abstain"
_KIND_SEEN: dict[str, StageKind] = {"intentions": "intention", "plan": "plan", "claims": "claim"}


@dataclass(frozen=True)
class Stage:
    """Speakers that run concurrently, what they see of this round, and what they write;
    ``acts``: each speaker also decides its action at the end of this stage."""

    speakers: tuple[str, ...]
    sees: Sees
    kind: StageKind
    acts: bool = False


@dataclass(frozen=True)
class ElectionRecord:
    """A recorded election: the ballots, the counts of valid votes, the winner, and how
    many voters voted for themselves (counted like any vote)."""

    round: int
    votes: dict[str, str]
    counts: dict[str, int]
    winner: str
    self_votes: int = 0


def schedule(
    resolved: ResolvedOrganization,
    agents: Sequence[str],
    round_index: int,
    *,
    with_election: bool = True,
) -> list[Stage]:
    """The stages of one round's communicate phase (empty stages are left out).

    Speaking order depends on who leads, so after a ``vote`` stage a runner tallies,
    re-resolves with ``resolved.with_leaders([winner])`` and takes the remaining stages
    from ``schedule(new_resolved, agents, round_index, with_election=False)``.

    Args:
        resolved: The organization for this team.
        agents: Who speaks this round (any order; team order is used).
        round_index: 0-based decision round, for elections.
        with_election: Prepend the vote stage when :func:`election_due`.

    Raises:
        ValueError: An agent is not in the team.
    """
    speaking, team = set(agents), set(resolved.team)  # 256 agents: no scans of either
    order = [a for a in resolved.team if a in speaking]
    unknown = [a for a in agents if a not in team]
    if unknown:
        raise ValueError(f"schedule(): agents not in the team: {', '.join(unknown)}")
    org = resolved.organization
    stages: list[Stage] = []
    if with_election and election_due(resolved, round_index):
        voters = tuple(a for a in resolved.team if a not in resolved.removed)
        stages.append(Stage(voters, "none_this_round", "vote"))
    lead = [a for a in resolved.leaders if a in order]
    rest = [a for a in order if a not in lead]
    if org.protocol in ("free", "sequential_messages"):
        stages += [_solo(a, "all_prior", "message", False) for a in order]
    elif org.protocol == "sequential":
        stages += [_solo(a, "all_prior", "message", True) for a in order]
    elif org.protocol == "leader_first":
        stages += [_solo(a, "all_prior", "message", False) for a in lead + rest]
    elif org.protocol == "coordinator":
        top = [a for a in resolved.tiers[0][1] if a in order]
        others = tuple(a for a in order if a not in top)
        stages += [Stage(tuple(top), "none_this_round", "plan"), Stage(others, "plan", "message")]
    elif org.protocol == "broadcast":
        stages += [
            Stage(tuple(order), "none_this_round", "intention"),
            Stage(tuple(order), "intentions", "message"),
        ]
    elif org.protocol == "shared":
        stages.append(Stage(tuple(order), "none_this_round", "message"))
    elif org.protocol == "batched_sequential":
        k = org.batch_size or 1
        stages += [
            Stage(tuple(order[i : i + k]), "all_prior", "message", acts=True)
            for i in range(0, len(order), k)
        ]
    elif org.protocol == "claim_shared":
        stages += [
            Stage(tuple(order), "none_this_round", "claim"),
            Stage(tuple(order), "claims", "message"),
        ]
    return [s for s in stages if s.speakers]


@lru_cache(maxsize=4096)
def _solo(agent: str, sees: Sees, kind: StageKind, acts: bool) -> Stage:
    """The stage of ``agent`` alone: made once, not every round (a :class:`Stage` is
    frozen, so rounds share it; under ``sequential`` at 256 agents a round has 256)."""
    return Stage((agent,), sees, kind, acts)


class RoundOutputs(list):
    """A round's outputs (a list, in the order said) that also keeps what each member
    may see: the ones every member may (public, or delivered to everyone else) once,
    and per member the others delivered to it or written by it.

    :func:`visible_outputs` then reads those instead of testing every output's
    receivers: under ``sequential`` at 256 agents every speaker would scan hundreds of
    outputs, each delivered to 255 agents. Outputs are sorted into those when next read,
    not when said: a round whose stages see nothing of it (``shared``: 256 messages to
    everyone) never pays for it. The public ones are a
    :class:`~orgteams.agents.messages.Broadcast`: a member that may see only those is
    handed a :class:`~orgteams.agents.messages.Heard` cut of it (a list like any other),
    whose filtering and search by kind its readers share.
    """

    def __init__(self, team: Sequence[str]) -> None:
        super().__init__()
        self._team = frozenset(team)
        # handed out as Heard cuts: what its 256 readers derive alike is derived once
        self._public = Broadcast()
        self._at: list[int] = []  # the public ones' places in the round
        self._private: dict[str, list[int]] = {}  # member -> places of its other ones
        self._sorted = 0  # outputs sorted into those so far
        self.last_stage = -1  # the latest stage any output was said in
        self.in_stage_order = True  # no output said in an earlier stage than one before it

    def append(self, o: TeamMessage) -> None:
        self.extend((o,))

    def extend(self, outputs: Iterable[TeamMessage]) -> None:
        # one pass and one list.extend: the round loop adds every speaker's turn (256
        # stages a round under sequential), where an append per output cost three calls
        outputs = outputs if type(outputs) in (list, tuple) else list(outputs)
        last = self.last_stage
        for o in outputs:
            if o.stage < last:
                self.in_stage_order = False
            elif o.stage > last:
                last = o.stage
        list.extend(self, outputs)
        self.last_stage = last

    def __iadd__(self, outputs: Iterable[TeamMessage]) -> RoundOutputs:
        self.extend(outputs)
        return self

    def _sort_new(self) -> None:
        """Sort the outputs said since the last read into public and per member."""
        for at in range(self._sorted, len(self)):
            o = self[at]
            reach = None if o.delivered is None else {o.sender, *o.delivered}
            if reach is None or len(reach) >= len(self._team) and self._team <= reach:
                self._public.append(o)
                self._at.append(at)
                continue
            for a in reach & self._team:
                self._private.setdefault(a, []).append(at)
        self._sorted = len(self)

    def seen_by(self, agent: str) -> list[TeamMessage] | None:
        """The outputs ``agent`` may see, in the order said (None: not of the team).
        Do not change the list."""
        if agent not in self._team:
            return None
        if self._sorted < len(self):
            self._sort_new()
        mine = self._private.get(agent)
        if not mine:
            return self._public
        return [self[i] for i in sorted(self._at + mine)]


class Inboxes:
    """A round's routed messages by receiver, each receiver's in the order routed, until
    it takes them.

    A message delivered to every member but its sender is kept once, not put in 255
    lists (under ``shared`` at 256 agents each says something to everyone: 65,000
    appends a round); a receiver's messages are cut from those when it takes them, as
    a :class:`~orgteams.agents.messages.Heard` cut of that one
    :class:`~orgteams.agents.messages.Broadcast`, so that what every receiver derives
    alike from it (which it heard before) is derived once.
    """

    def __init__(self, team: Sequence[str]) -> None:
        self._others = len(team) - 1
        self._to_all = Broadcast()  # those to every member but the sender
        self._sent: dict[str, list[int]] = {}  # sender -> places of its own in _to_all
        # receiver -> the other messages to it: (how many of _to_all came before, message)
        self._to_some: dict[str, list[tuple[int, TeamMessage]]] = {}
        self._taken: dict[str, int] = {}  # receiver -> how many of _to_all it has taken

    def add(self, message: TeamMessage, delivered: Sequence[str]) -> None:
        """Route ``message`` to ``delivered``: members of the team other than its sender,
        each once (as :func:`route` gives them; their count says whether it is to all)."""
        if len(delivered) == self._others:
            self._sent.setdefault(message.sender, []).append(len(self._to_all))
            self._to_all.append(message)
            return
        for b in delivered:
            self._to_some.setdefault(b, []).append((len(self._to_all), message))

    def take(self, agent: str) -> list[TeamMessage]:
        """The messages routed to ``agent`` since it last took them, in the order routed."""
        start = self._taken.get(agent, 0)
        self._taken[agent] = len(self._to_all)
        to_some = self._to_some.pop(agent, ())
        if not to_some:  # a cut of the broadcast, less its own
            return Heard.cut(self._to_all, start, len(self._to_all), agent,
                             self._sent.get(agent, ()))
        heard, at = [], start
        for before, message in to_some:
            heard += self._to_all_but(agent, at, before)
            heard.append(message)
            at = before
        heard += self._to_all_but(agent, at, len(self._to_all))
        return heard

    def _to_all_but(self, agent: str, start: int, stop: int) -> list[TeamMessage]:
        """``_to_all[start:stop]`` less ``agent``'s own, as slices around them."""
        out, at = [], start
        for i in self._sent.get(agent, ()):
            if start <= i < stop:
                out += self._to_all[at:i]
                at = i + 1
        out += self._to_all[at:stop]
        return out


def visible_outputs(
    stages: Sequence[Stage], stage_index: int, agent: str, outputs: Sequence[TeamMessage]
) -> list[TeamMessage]:
    """What ``agent`` sees of this round when it speaks in ``stages[stage_index]``.

    Only turns of earlier stages count (same-stage speakers are concurrent), and of
    those only turns delivered to ``agent`` (``delivered`` None: public) or written by
    it, filtered by ``sees`` (the kind of the stage a turn was said in). ``outputs``
    may be a :class:`RoundOutputs` (the same answer, faster; under ``all_prior`` a
    :class:`~orgteams.agents.messages.Heard` cut, the same list).
    """
    if not 0 <= stage_index < len(stages):
        raise ValueError(f"stage_index {stage_index} out of range for {len(stages)} stages")
    sees = stages[stage_index].sees
    if sees == "none_this_round":
        return []
    kind = _KIND_SEEN.get(sees)
    mine = outputs.seen_by(agent) if isinstance(outputs, RoundOutputs) else None
    if mine is not None:
        if kind is None and outputs.in_stage_order:
            # those of earlier stages are all but the last few (sequential: 256 speakers,
            # each seeing every turn before its own)
            k = len(mine)
            while k and mine[k - 1].stage >= stage_index:
                k -= 1
            if mine is outputs._public:  # a cut: its readers share its keys (unseen)
                return Heard.cut(mine, 0, k)
            return mine[:k]
        return [o for o in mine if o.stage < stage_index
                and (kind is None or stages[o.stage].kind == kind)]
    return [
        o
        for o in outputs
        if o.stage < stage_index
        and (kind is None or stages[o.stage].kind == kind)
        and (o.sender == agent or o.delivered is None or agent in o.delivered)
    ]


def route(
    sender: str, receivers: Receivers | Sequence[str], resolved: ResolvedOrganization
) -> tuple[list[str], list[str]]:
    """Split a message's receivers into ``(delivered, dropped)`` along allowed channels.

    ``"everyone"`` means every other team member. Receivers outside the team, the sender
    itself and receivers the channels forbid are dropped; duplicates are removed.
    """
    if receivers == EVERYONE:  # the common case, routed once per resolution
        delivered, dropped = resolved.to_everyone(sender)  # an unknown sender raises
        return list(delivered), list(dropped)
    resolved.role_of(sender)  # raises a clear error for an unknown sender
    wanted = receivers
    delivered, dropped = [], []
    team = resolved.reports_to  # a dict by agent: membership without scanning the team
    for r in dict.fromkeys(wanted):
        ok = r in team and r != sender and resolved.can_message(sender, r)
        (delivered if ok else dropped).append(r)
    return delivered, dropped


def _norm(role: str | None) -> str:
    return " ".join((role or "").split()).casefold()


def _natural(agent: str) -> tuple[str, int]:
    m = re.fullmatch(r"(.*?)(\d+)", agent)
    return (m.group(1), int(m.group(2))) if m else (agent, -1)


def resolve_claims(
    claims: Mapping[str, str | None], order: Sequence[str] | None = None
) -> dict[str, str | None]:
    """Settle role claims: of agents claiming the same role, the earliest keeps it.

    Roles compare case- and whitespace-insensitively; ``None``, empty and ``"abstain"``
    claim nothing. Earliest means first in ``order`` (default: agent_2 before agent_10).

    Returns:
        ``{agent: role or None}`` in the input's key order; losers get ``None``.
    """
    rank = {a: i for i, a in enumerate(order)} if order is not None else None
    key = (lambda a: (rank.get(a, len(rank)), _natural(a))) if rank is not None else _natural
    taken: set[str] = set()
    granted: dict[str, str | None] = {}
    for agent in sorted(claims, key=key):
        role = claims[agent]
        norm = _norm(role)
        if norm and norm != ABSTAIN and norm not in taken:
            taken.add(norm)
            granted[agent] = role
        else:
            granted[agent] = None
    return {a: granted[a] for a in claims}


def election_due(resolved: ResolvedOrganization, round_index: int) -> bool:
    """Whether round ``round_index`` (0-based) opens with an election: rounds 0, k, 2k...
    (``k = election_every``), or round 0 only when the rules say ``reelect: once``."""
    org = resolved.organization
    if org.leadership_rule != "election":
        return False
    if org.rules.election.reelect == "once":
        return round_index == 0
    return round_index % (org.election_every or 1) == 0


def tally(
    votes: Mapping[str, str], order: Sequence[str] | None = None, incumbent: str | None = None
) -> str:
    """The winner of an election: most valid votes; ties go to the incumbent, else the
    earliest candidate in ``order`` (default: natural agent order).

    Votes for candidates outside ``order`` (when given) are ignored. With no valid vote
    the incumbent (or ``order[0]``) stays.

    Raises:
        ValueError: No valid vote and neither an incumbent nor an ``order``.
    """
    counts = _counts(votes, order)
    if not counts:
        if incumbent is not None:
            return incumbent
        if order:
            return order[0]
        raise ValueError("tally() needs at least one valid vote, an incumbent or an order")
    best = max(counts.values())
    tied = [c for c, n in counts.items() if n == best]
    if incumbent in tied:
        return incumbent
    rank = {a: i for i, a in enumerate(order or ())}
    return min(tied, key=lambda a: (rank.get(a, len(rank)), _natural(a)))


def record_election(
    round_index: int,
    votes: Mapping[str, str],
    order: Sequence[str] | None = None,
    incumbent: str | None = None,
) -> ElectionRecord:
    """Tally ``votes`` and keep the ballots and counts for the episode log."""
    winner = tally(votes, order, incumbent)
    own = sum(1 for voter, c in votes.items() if voter == c and (order is None or c in order))
    return ElectionRecord(round_index, dict(votes), _counts(votes, order), winner, own)


def _counts(votes: Mapping[str, str], order: Sequence[str] | None) -> dict[str, int]:
    valid = [c for c in votes.values() if order is None or c in order]
    return dict(Counter(valid))


def leader_for_round(
    resolved: ResolvedOrganization,
    round_index: int,
    *,
    current: str | None = None,
    progress: Mapping[str, float] | None = None,
) -> str:
    """The top leader for a round under ``round_robin`` / ``most_progress`` rules.

    Leadership changes only on rounds ``0, k, 2k, ...`` (``k = leadership_every``); in
    between the ``current`` leader stays. ``round_robin`` gives round ``r`` to
    ``team[(r // k) % n]``; ``most_progress`` to the agent with the highest
    ``progress`` (ties: the current leader, then team order); members a shock removed
    are left out of both. Other rules return the resolved top leader (or ``current``).
    """
    org = resolved.organization
    team = tuple(a for a in resolved.team if a not in resolved.removed) or resolved.team
    top = resolved.tiers[0][1] if resolved.tiers and resolved.tiers[0][1] else team[:1]
    default = current if current is not None else top[0]
    k = org.leadership_every or 1
    if org.leadership_rule not in ("round_robin", "most_progress") or round_index % k:
        return default
    if org.leadership_rule == "round_robin":
        return team[(round_index // k) % len(team)]
    if not progress:
        return default
    best = max(progress.get(a, 0.0) for a in team)
    tied = [a for a in team if progress.get(a, 0.0) == best]
    return default if default in tied else tied[0]
