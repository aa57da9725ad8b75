"""Episode metrics from decision lines: the one place headline formulas are written.

They read an episode's decision lines (:class:`~orgteams.agents.records.MessageLine`,
:class:`~orgteams.agents.records.ActionLine`: ``EpisodeResult.records``, or
:func:`~orgteams.organizations.rounds.episode_log.read_log` of a saved log; other lines
are ignored):

====================  ===============================================================
field                 meaning
====================  ===============================================================
``round``             0-based decision round
``tick``              env ticks elapsed when the line was written
``agent``             agent id, e.g. ``"agent_0"``
``phase``             ``"communicate"`` or ``"act"``
``kind``              ``"message"``, ``"intention"``, ``"plan"``, ``"claim"``, ``"vote"``,
                      ``"action"``, ...
``message``           the message sent (its ``text``, ``delivered``: who actually
                      received it), or None for silence (communicate lines)
``message_tokens``    tokens of the message text
``call.usage``        prompt and completion tokens of the model call
``call.cached_usage`` the part of ``usage`` served from a response cache (billed nothing)
``call.model``        the model the call used (for ``cost_usd``)
``call.fallback``     None, or why the safe fallback was used
``abstained``         ``True`` / ``False`` where abstaining was possible, else None
``role``              the role the agent took (self-chosen or assigned)
``vote``              the agent id it voted for (``kind`` ``"vote"``)
====================  ===============================================================

Team events (:class:`~orgteams.organizations.rounds.episode_log.EventLine`: ``election``
with its ``winner``, ``leader_change`` with its ``leader``) give the leadership terms of
``leader_tenure``.

A line counts as a message when its message text is not blank. A decision is one
agent's turn: the lines with the same ``round``, ``phase``, ``stage`` and ``agent`` (a
turn that sends several messages writes one line per message).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

import networkx as nx

from orgteams.agents.records import DecisionLine, MessageLine
from orgteams.organizations.metrics.graph import (
    algebraic_connectivity,
    algebraic_connectivity_binary,
    hierarchy_depth,
    message_reach_depth,
    spectral_gap,
)
from orgteams.organizations.protocols.facts import SELF_ORGANIZING

if TYPE_CHECKING:  # the tokenizer is imported when metrics are computed
    from orgteams.agents.llm.tokens import Tokenizer
    from orgteams.organizations.rounds.episode_log import EventLine

PriceFn = Callable[[str, int, int], "float | None"]


def comm_tokens_per_step(message_tokens_sent: int, ticks: int) -> float:
    """The headline communication cost, the organized-teams paper's "average
    communicated tokens per step": message tokens *sent* (each message once, however
    many receivers) per tick; 0 when no tick. Pass delivered tokens to get
    ``delivered_tokens_per_step``, the load measure reported beside it."""
    return message_tokens_sent / ticks if ticks > 0 else 0.0


@dataclass(frozen=True)
class EpisodeMetrics:
    """Everything measured about one episode (see the module docstring for the inputs).

    ``message_tokens_sent`` counts each message once; ``message_tokens_delivered`` once
    per receiver that got it. ``comm_tokens_per_step`` is the headline,
    ``message_tokens_sent / ticks`` (:func:`comm_tokens_per_step`, the paper's
    definition); ``delivered_tokens_per_step`` is ``message_tokens_delivered / ticks``
    beside it (a broadcast to n agents counts n - 1 times there).
    ``cost_usd`` is ``None`` when any call's model has no known price; calls served from
    a response cache (``cached_usage``) cost nothing, though their tokens still count in
    ``llm_prompt_tokens`` and ``llm_completion_tokens``.
    ``abstention_rate`` is abstentions over records with a non-``None`` ``abstained``;
    the round loop's ``abstention`` events split them into ``mid_task_abstentions``
    (work was left: a goal unit no teammate still working held or went for) and
    ``end_of_task_abstentions`` (nothing left to do), and ``mid_task_abstention_rate``
    is the first over the same records (docs/metrics.md).
    ``decisions`` counts agents' turns (see the module docstring); ``fallback_count``
    the turns with a ``fallback`` (a declared safe decision taken instead of the
    model's: a failed call, replies that were all invalid, an unavailable action) and
    ``fallback_rate`` their share of ``decisions`` (None without a decision).
    ``unique_roles`` counts distinct roles (case-insensitive, ``abstain`` excluded).
    ``election_count`` counts rounds with at least one ``vote`` record; ``self_vote_rate``
    is the share of ballots an agent cast for itself (None: no ballots);
    ``leader_tenure`` the mean length in rounds of a top leader's term (rounds over
    terms; a term ends when an election or hand-over gives the lead to another agent;
    None without a leader). ``hierarchy_depth`` is the longest chain of the
    :func:`dependency_graph` (the self-organizing paper's; 0 when nobody depended on
    anybody, 1 for a leader's orders carried out, 2 through vice leaders). The other
    graph metrics are computed on :func:`communication_graph`: ``message_reach_depth``
    (hops from the top leader to the farthest agent its messages reach, what
    ``hierarchy_depth`` meant before #27), ``algebraic_connectivity`` (lambda_2 of the
    weighted combinatorial Laplacian, DESIGN.md's; it grows with message counts, so
    with episode length), ``algebraic_connectivity_per_tick`` (that over ``ticks``:
    comparable across episode lengths), ``algebraic_connectivity_binary`` (lambda_2 of
    the unweighted Laplacian: structure only, the one the self-organizing paper's value
    corresponds to, docs/metrics.md) and ``spectral_gap`` (lambda_2 of the normalized
    Laplacian, at most n/(n-1)); see :mod:`~orgteams.organizations.metrics.graph`.
    """

    success: bool
    ticks: int
    rounds: int
    messages_sent: int
    message_tokens_sent: int
    message_tokens_delivered: int
    comm_tokens_per_step: float
    delivered_tokens_per_step: float
    message_words_sent: int
    llm_prompt_tokens: int
    llm_completion_tokens: int
    cost_usd: float | None
    fallback_count: int
    abstention_rate: float
    unique_roles: int
    election_count: int
    self_vote_rate: float | None
    leader_tenure: float | None
    hierarchy_depth: int
    algebraic_connectivity: float
    spectral_gap: float
    message_reach_depth: int = 0
    mid_task_abstentions: int = 0
    end_of_task_abstentions: int = 0
    mid_task_abstention_rate: float = 0.0
    algebraic_connectivity_binary: float = 0.0
    algebraic_connectivity_per_tick: float = 0.0
    decisions: int = 0
    fallback_rate: float | None = None
    messages_by_kind: dict[str, int] = field(default_factory=dict)
    prompt_tokens_by_agent: dict[str, int] = field(default_factory=dict)
    completion_tokens_by_agent: dict[str, int] = field(default_factory=dict)
    prompt_tokens_by_phase: dict[str, int] = field(default_factory=dict)
    completion_tokens_by_phase: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _decisions(records: Iterable[Any]) -> list[DecisionLine]:
    return [r for r in records if isinstance(r, DecisionLine)]


def _text(r: DecisionLine) -> str | None:
    """The message text of a communicate line (None: silence, or an act line)."""
    message = getattr(r, "message", None)
    return None if message is None else message.text


def _is_message(r: DecisionLine) -> bool:
    text = _text(r)
    return isinstance(text, str) and bool(text.strip())


def _tokens(r: MessageLine, tokenizer: Tokenizer) -> int:
    if r.message_tokens is not None:
        return int(r.message_tokens)
    return tokenizer.count(r.message.text)


def communication_graph(records: Iterable[DecisionLine], agents: Iterable[str] = ()
                        ) -> nx.DiGraph:
    """Who messaged whom: edge weight = messages delivered from sender to receiver.

    Nodes are ``agents`` plus every sender and receiver in the lines.
    """
    g = nx.DiGraph()
    g.add_nodes_from(agents)
    for r in _decisions(records):
        if r.agent is not None:
            g.add_node(r.agent)
        if not _is_message(r):
            continue
        for to in r.message.delivered or ():
            w = g[r.agent][to]["weight"] if g.has_edge(r.agent, to) else 0
            g.add_edge(r.agent, to, weight=w + 1)
    return g


def self_organizing_rounds(protocol: str | None, events: Iterable[EventLine] = ()
                           ) -> Callable[[int], bool]:
    """Whether the protocol in force at a round is self-organizing, from the starting
    ``protocol`` and the events that change it: a ``regulate`` shock of ``protocol``
    (in force from its round) and the monitor's ``org_switch`` (from the next round)."""
    changes = [(0, protocol)]
    for e in events:
        if e.type == "shock" and e.get("kind") == "regulate" and e.get("field") == "protocol":
            changes.append((int(e.round), e.get("after")))
        elif e.type == "org_switch" and e.get("to_protocol"):
            changes.append((int(e.round) + 1, e.get("to_protocol")))
    changes.sort(key=lambda c: c[0])

    def at(round_: int) -> bool:
        now = protocol
        for start, p in changes:
            if start > round_:
                break
            now = p
        return now in SELF_ORGANIZING

    return at


def dependency_graph(records: Iterable[DecisionLine], agents: Iterable[str] = (), *,
                     self_organizing: Callable[[int], bool] = lambda round_: False
                     ) -> nx.DiGraph:
    """Who depended on whom: edge ``A -> B`` (weight: how many of B's decisions) when
    B's chosen action carried out A's order, or, in rounds whose protocol is
    ``self_organizing``, when B chose it deferring to A's claim or chosen action (what
    it would have taken otherwise was A's).

    Read from the act lines' ``call.parsed["depends_on"]`` (``{agent: "order" |
    "claim"}``), which the deciding member writes (planners do; docs/metrics.md).
    Nodes are ``agents`` plus every agent in the lines.
    """
    g = nx.DiGraph()
    g.add_nodes_from(agents)
    for r in _decisions(records):
        if r.agent is None:
            continue
        g.add_node(r.agent)
        parsed = r.call.parsed if r.phase == "act" else None
        deps = parsed.get("depends_on") if isinstance(parsed, dict) else None
        for who, how in (deps or {}).items():
            if who != r.agent and (how == "order" or (
                    how == "claim" and self_organizing(int(r.round or 0)))):
                w = g[who][r.agent]["weight"] if g.has_edge(who, r.agent) else 0
                g.add_edge(who, r.agent, weight=w + 1)
    return g


def _default_price(model: str, prompt: int, completion: int) -> float | None:
    from orgteams.agents.backends.base import Usage
    from orgteams.agents.backends.pricing import cost

    return cost(model, Usage(prompt, completion))


def episode_metrics(
    records: Sequence[Any],
    *,
    success: bool,
    ticks: int | None = None,
    agents: Iterable[str] = (),
    leaders: Sequence[str] | None = None,
    price: PriceFn | None = None,
    events: Sequence[EventLine] = (),
    first_leader: str | None = None,
    tokenizer: Tokenizer | None = None,
    protocol: str | None = None,
) -> EpisodeMetrics:
    """Compute :class:`EpisodeMetrics` from an episode's decision lines.

    Args:
        records: The episode's lines (its decision lines are read; see the module
            docstring).
        success: Whether the task was completed.
        ticks: Env ticks of the episode; default the largest ``tick`` in the lines.
        agents: The team, so silent agents still count as graph nodes.
        leaders: Roots for ``message_reach_depth`` (default: the busiest sender).
        price: ``price(model, prompt_tokens, completion_tokens) -> USD or None``;
            default the shipped price table (:mod:`orgteams.agents.backends.pricing`).
        events: Team events: elections and hand-overs (``leader_tenure``),
            ``abstention`` events (mid-task and end-of-task abstentions), protocol
            changes (:func:`self_organizing_rounds`).
        first_leader: The top leader at round 0 (default: the first of ``leaders``).
        tokenizer: Counts messages whose line has no ``message_tokens`` (the
            episode's; default the module's, for a saved log with no owner at hand).
        protocol: The protocol the episode started with; with ``events`` it says in
            which rounds deference counts in :func:`dependency_graph` (None: none).
    """
    from orgteams.agents.llm.tokens import count_words, default_tokenizer

    records = _decisions(records)
    agents = list(agents)
    tokenizer = tokenizer if tokenizer is not None else default_tokenizer()
    if ticks is None:
        ticks = max((int(r.tick or 0) for r in records), default=0)
    if ticks < 0:
        raise ValueError(f"ticks must be >= 0, got {ticks}")
    price = price or _default_price
    msgs = [r for r in records if _is_message(r)]
    usage = {k: defaultdict(int) for k in ("pa", "ca", "pp", "cp")}
    per_model: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    cost_known = True
    for r in records:
        u = r.call.usage
        p, c = int(u.prompt_tokens or 0), int(u.completion_tokens or 0)
        if not (p or c):
            continue
        agent, phase = str(r.agent), str(r.phase)
        usage["pa"][agent] += p
        usage["ca"][agent] += c
        usage["pp"][phase] += p
        usage["cp"][phase] += c
        if r.call.model is None:
            cost_known = False
        else:  # calls served from a cache are billed nothing
            cached = r.call.cached_usage
            per_model[str(r.call.model)][0] += p - int(cached.prompt_tokens or 0)
            per_model[str(r.call.model)][1] += c - int(cached.completion_tokens or 0)
    costs = [price(m, p, c) for m, (p, c) in per_model.items()]
    cost_usd = None if not cost_known or None in costs else float(sum(costs))
    decisions = [r for r in records if getattr(r, "abstained", None) is not None]
    roles = {" ".join(str(r.role).split()).casefold() for r in records
             if getattr(r, "role", None)}
    roles.discard("abstain")
    delivered = sum(_tokens(r, tokenizer) * len(r.message.delivered or ()) for r in msgs)
    sent = sum(_tokens(r, tokenizer) for r in msgs)
    graph = communication_graph(records, agents)
    ballots = [r for r in records if r.kind == "vote" and getattr(r, "vote", None)]
    rounds = len({r.round for r in records if r.round is not None})
    turns: dict[tuple, bool] = {}
    for r in records:
        if r.phase is not None and r.agent is not None:
            key = (r.round, r.phase, getattr(r, "stage", None), r.agent)
            turns[key] = turns.get(key, False) or bool(r.call.fallback)
    fell_back = sum(turns.values())
    abstentions = [e for e in events if e.type == "abstention"]
    mid_task = sum(len(e.get("agents") or ()) for e in abstentions if e.get("mid_task"))
    return EpisodeMetrics(
        success=bool(success),
        ticks=ticks,
        rounds=rounds,
        messages_sent=len(msgs),
        message_tokens_sent=sent,
        message_tokens_delivered=delivered,
        comm_tokens_per_step=comm_tokens_per_step(sent, ticks),
        delivered_tokens_per_step=comm_tokens_per_step(delivered, ticks),
        message_words_sent=sum(count_words(r.message.text) for r in msgs),
        llm_prompt_tokens=sum(usage["pa"].values()),
        llm_completion_tokens=sum(usage["ca"].values()),
        cost_usd=cost_usd,
        fallback_count=fell_back,
        abstention_rate=(
            sum(1 for r in decisions if r.abstained) / len(decisions) if decisions else 0.0
        ),
        unique_roles=len(roles),
        election_count=len({r.round for r in records if r.kind == "vote"}),
        self_vote_rate=(sum(1 for r in ballots if r.vote == r.agent) / len(ballots)
                        if ballots else None),
        leader_tenure=leader_tenure(events, first_leader or (leaders[0] if leaders else None),
                                    rounds),
        hierarchy_depth=hierarchy_depth(dependency_graph(
            records, agents, self_organizing=self_organizing_rounds(protocol, events))),
        message_reach_depth=message_reach_depth(graph, leaders),
        mid_task_abstentions=mid_task,
        end_of_task_abstentions=sum(len(e.get("agents") or ()) for e in abstentions
                                    if not e.get("mid_task")),
        mid_task_abstention_rate=mid_task / len(decisions) if decisions else 0.0,
        algebraic_connectivity=(lam2 := algebraic_connectivity(graph)),
        spectral_gap=spectral_gap(graph),
        algebraic_connectivity_binary=algebraic_connectivity_binary(graph),
        algebraic_connectivity_per_tick=lam2 / ticks if ticks > 0 else 0.0,
        decisions=len(turns),
        fallback_rate=fell_back / len(turns) if turns else None,
        messages_by_kind=dict(Counter(str(r.kind) for r in msgs)),
        prompt_tokens_by_agent=dict(usage["pa"]),
        completion_tokens_by_agent=dict(usage["ca"]),
        prompt_tokens_by_phase=dict(usage["pp"]),
        completion_tokens_by_phase=dict(usage["cp"]),
    )


def leader_tenure(events: Iterable[EventLine], first: str | None, rounds: int
                  ) -> float | None:
    """Mean rounds per leadership term: ``rounds`` over the number of terms, a term
    starting with ``first`` at round 0 and with each election or hand-over that gives
    the lead to another agent. None without a leader or a round."""
    if first is None or rounds <= 0:
        return None
    current, terms = first, 1
    for e in events:
        new = e.get("winner") if e.type == "election" else (
            e.get("leader") if e.type == "leader_change" else None)
        if new is not None and new != current:
            current, terms = new, terms + 1
    return rounds / terms


def roles_by_round(records: Iterable[Any]) -> dict[str, dict[str, str]]:
    """Each agent's role per round, ``{round: {agent: role}}`` (JSON keys: strings), from
    the communicate-phase lines' ``role`` (assigned, or self-chosen and granted); an
    agent with no role that round is left out. The last line of a round wins."""
    out: dict[str, dict[str, str]] = {}
    for r in _decisions(records):
        if r.phase == "communicate" and getattr(r, "role", None) and r.round is not None:
            out.setdefault(str(r.round), {})[str(r.agent)] = str(r.role)
    return out


def episode_roles(roles_by_round_: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Each agent's role in an episode: the one it held in most rounds (ties: the one
    it held first); the per-episode input of :func:`role_stability_index`."""
    held: dict[str, Counter] = defaultdict(Counter)
    first: dict[str, dict[str, int]] = defaultdict(dict)
    for round_, roles in sorted(roles_by_round_.items(), key=lambda kv: int(kv[0])):
        for agent, role in roles.items():
            norm = " ".join(str(role).split()).casefold()
            held[agent][norm] += 1
            first[agent].setdefault(norm, int(round_))
    return {a: min(c, key=lambda r: (-c[r], first[a][r])) for a, c in held.items()}


def role_stability_index(episodes_roles: Sequence[Mapping[str, str]]) -> float:
    """How much agents keep their role across consecutive episodes, in [0, 1].

    For each agent, the fraction of consecutive episode pairs (both containing the
    agent) in which its role is unchanged (case- and whitespace-insensitive); the index
    is the mean over agents with at least one such pair. ``nan`` when no agent has one.

    Raises:
        ValueError: Fewer than 2 episodes.
    """
    if len(episodes_roles) < 2:
        raise ValueError(
            f"role_stability_index needs at least 2 episodes, got {len(episodes_roles)}"
        )
    same: dict[str, list[bool]] = defaultdict(list)
    for before, after in zip(episodes_roles, episodes_roles[1:]):
        for agent in before.keys() & after.keys():
            norm = [" ".join(str(x).split()).casefold() for x in (before[agent], after[agent])]
            same[agent].append(norm[0] == norm[1])
    if not same:
        return math.nan
    return sum(sum(v) / len(v) for v in same.values()) / len(same)


def _summary(values: list[float]) -> dict[str, float | int | None]:
    n = len(values)
    mean = sum(values) / n if n else None
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else None
    return {"n": n, "mean": mean, "sd": sd}


def aggregate(metrics: Sequence[EpisodeMetrics]) -> dict[str, Any]:
    """Mean and sample sd (ddof=1) of every numeric field, over all and successful episodes.

    Returns:
        ``{"episodes": n, "successes": k, "success_rate": k/n, "all_episodes": {field:
        {"n", "mean", "sd"}}, "successful_episodes": {...}}``. ``None`` values (an
        unknown cost) are left out of that field's ``n``; mean is ``None`` when ``n`` is
        0 and sd when ``n`` < 2.
    """
    numeric = [
        f.name
        for f in fields(EpisodeMetrics)
        if f.name != "success" and f.type in ("int", "float", "float | None")
    ]

    def table(ms: Sequence[EpisodeMetrics]) -> dict[str, Any]:
        return {
            name: _summary([float(v) for m in ms if (v := getattr(m, name)) is not None])
            for name in numeric
        }

    wins = [m for m in metrics if m.success]
    return {
        "episodes": len(metrics),
        "successes": len(wins),
        "success_rate": len(wins) / len(metrics) if metrics else None,
        "all_episodes": table(metrics),
        "successful_episodes": table(wins),
    }
