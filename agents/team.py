"""Who is on the team: agent ids, display names and roles, derived once.

Agent ids are ``agent_0 ... agent_{n-1}`` (:func:`agent_ids`); display names are
labels for people and prompts (Alice, Bob, ...; :func:`display_names`). A
:class:`Team` holds both, in speaking order, plus each agent's role once an
organization assigned one: ``Organization.resolve(team)`` returns the team with its
roles as ``ResolvedOrganization.roster`` (roles given to ``resolve`` are ignored: the
organization decides them). It is what the round loop shows members (``team.by_id``);
the window draws its names (the env's ``display_names``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from orgteams.envs.household import agent_ids

__all__ = ["AGENT_ID", "Team", "agent_ids", "display_names"]

AGENT_ID = re.compile(r"agent_(\d+)")
_NAMES = (
    "Alice", "Bob", "Charlie", "David", "Eve", "Frank",
    "Grace", "Heidi", "Ivan", "Judy", "Kevin", "Laura",
)  # fmt: skip


def display_names(n: int) -> list[str]:
    """Display names for ``agent_0 ... agent_{n-1}``: Alice, Bob, ... Laura, then Agent12, ...

    Args:
        n: Team size (>= 0).

    Returns:
        One label per agent index; labels are for prompts only, ids stay ``agent_i``.
    """
    if n < 0:
        raise ValueError(f"display_names(n) needs n >= 0, got {n}")
    return [_NAMES[i] if i < len(_NAMES) else f"Agent{i}" for i in range(n)]


def _default_name(agent: str) -> str:
    match = AGENT_ID.fullmatch(agent)
    if not match:
        return agent  # ids that are not agent_<i> are their own label
    i = int(match.group(1))
    return _NAMES[i] if i < len(_NAMES) else f"Agent{i}"


@dataclass(frozen=True)
class Team:
    """Agent ids, their display names and roles, in speaking order.

    Attributes:
        ids: Agent ids.
        names: One display name per id.
        roles: One role per id (None: none assigned); default: none at all.
    """

    ids: tuple[str, ...]
    names: tuple[str, ...]
    roles: tuple[str | None, ...] = ()

    def __post_init__(self) -> None:
        if len(set(self.ids)) != len(self.ids):
            raise ValueError(f"team has duplicate agents: {list(self.ids)}")
        if len(self.names) != len(self.ids):
            raise ValueError(f"team of {len(self.ids)} agents got {len(self.names)} names")
        if not self.roles:
            object.__setattr__(self, "roles", (None,) * len(self.ids))
        elif len(self.roles) != len(self.ids):
            raise ValueError(f"team of {len(self.ids)} agents got {len(self.roles)} roles")

    @classmethod
    def of(cls, ids: Sequence[str] | Team,
           names: Mapping[str, str] | Sequence[str] | None = None) -> Team:
        """A team of ``ids``; ``names`` by id or in order (default: ``agent_2`` is Charlie).
        A team given as ``ids`` keeps its roles."""
        if isinstance(ids, Team):
            return ids if names is None else cls.of(ids.ids, names).with_roles(ids.roles_by_id)
        ids = tuple(ids)
        if names is None:
            return cls(ids, tuple(_default_name(a) for a in ids))
        if isinstance(names, Mapping):
            return cls(ids, tuple(names.get(a) or _default_name(a) for a in ids))
        return cls(ids, tuple(names))

    @classmethod
    def of_size(cls, n: int, names: Sequence[str] | None = None) -> Team:
        """``agent_0 ... agent_{n-1}`` named ``names`` (default Alice, Bob, ...)."""
        return cls.of(agent_ids(n), names)

    @cached_property
    def by_id(self) -> dict[str, str]:
        """Agent id -> display name (a fresh copy is not made: do not mutate)."""
        return dict(zip(self.ids, self.names))

    @cached_property
    def roles_by_id(self) -> dict[str, str | None]:
        """Agent id -> role (None: none assigned; do not mutate)."""
        return dict(zip(self.ids, self.roles))

    def role(self, agent: str) -> str | None:
        """The role of ``agent`` (None when none is assigned).

        Raises:
            ValueError: ``agent`` is not on the team.
        """
        return self.roles[self.index(agent)]

    def with_roles(self, roles: Mapping[str, str | None]) -> Team:
        """The same agents and names with ``roles`` (by id; an agent left out has none).

        Raises:
            ValueError: A role for an agent not on the team.
        """
        unknown = [a for a in roles if a not in self]
        if unknown:
            raise ValueError(f"roles for agents not on the team: {unknown}; "
                             f"team: {', '.join(self.ids)}")
        return Team(self.ids, self.names, tuple(roles.get(a) for a in self.ids))

    @cached_property
    def _index(self) -> dict[str, int]:
        return {a: i for i, a in enumerate(self.ids)}

    def name(self, agent: str) -> str:
        """The display name of ``agent`` (an unknown id is its own label)."""
        return self.by_id.get(agent, agent)

    def index(self, agent: str) -> int:
        """Position of ``agent`` in speaking order.

        Raises:
            ValueError: ``agent`` is not on the team.
        """
        try:
            return self._index[agent]
        except KeyError:
            raise ValueError(f"unknown agent {agent!r}; team: {', '.join(self.ids)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, agent: object) -> bool:
        return agent in self._index
