"""High-level action ids and the action space of one agent: the ids it may choose now.

A high-level action is named by one :class:`ActionId` (``grab:cupcake_2``,
``explore:kitchen``, ``wait``) from a member's decision to the env's plan: a ``str``, so
it is written to logs, compared and hashed as the string, with its ``kind`` and
``target`` read from it. Which ids exist depends on what the agent has seen. A plain
``gymnasium.spaces.Text`` samples random strings that are almost never valid, so random
baselines and PettingZoo's ``parallel_api_test`` could not drive the env.
:class:`AvailableActions` is still a ``Text`` space (same length and charset, same
object every call), but while the agent is in an episode ``sample()`` draws one of its
available ids and ``contains()`` accepts exactly those (plus the one-tick ``primitive:<id>`` kind).
"""

from __future__ import annotations

import string
from typing import Any

from gymnasium import spaces

from orgteams.envs.core.actions import NUM_ACTIONS

PRIMITIVE = "primitive:"  # prefix of the one-tick primitive kind (never offered)


class ActionId(str):
    """One high-level action id, ``kind`` or ``kind:target`` (``grab:cupcake_2``, ``wait``).

    The one form an action takes from a member's decision to the env's plan (members,
    the round loop, the episode log and :meth:`HighLevelEnv.step` all pass it); a plain
    ``str`` id is the same value (``ActionId("wait") == "wait"``).
    """

    __slots__ = ()

    @classmethod
    def of(cls, kind: str, target: str = "") -> ActionId:
        """The id of ``kind`` on ``target`` (``kind`` alone without a target)."""
        return cls(f"{kind}:{target}" if target else kind)

    @property
    def kind(self) -> str:
        """``grab`` of ``grab:cupcake_2``."""
        return self.partition(":")[0]

    @property
    def target(self) -> str:
        """``cupcake_2`` of ``grab:cupcake_2`` (``""`` for ``wait``, ``continue``)."""
        return self.partition(":")[2]
ACTION_CHARSET = string.ascii_letters + string.digits + ":_"
MAX_ACTION_LENGTH = 128


def is_primitive(ident: Any) -> bool:
    """Whether ``ident`` is a well-formed ``primitive:<id>`` with an id in Discrete(53)."""
    if not isinstance(ident, str) or not ident.startswith(PRIMITIVE):
        return False
    target = ident[len(PRIMITIVE):]
    return target.isascii() and target.isdigit() and int(target) < NUM_ACTIONS


class AvailableActions(spaces.Text):
    """``Text`` space of one agent's high-level action ids, bound to its env."""

    def __init__(self, env: Any, agent: str):
        super().__init__(MAX_ACTION_LENGTH, charset=ACTION_CHARSET)
        self.env, self.agent = env, agent

    def _live(self) -> bool:
        return self.agent in self.env.agents

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """One of the agent's available ids now (a random string outside an episode)."""
        if mask is not None or probability is not None or not self._live():
            return super().sample(mask=mask, probability=probability)
        ids = [a.id for a in self.env.available_actions(self.agent)]
        return ids[int(self.np_random.integers(len(ids)))]

    def contains(self, x: Any) -> bool:
        """True for an id the env would accept from this agent now."""
        if not isinstance(x, str) or not self._live():
            return super().contains(x)
        if x.startswith(PRIMITIVE):
            return is_primitive(x)
        return any(a.id == x for a in self.env.available_actions(self.agent))

    def __repr__(self) -> str:
        return f"AvailableActions({self.agent!r}, max_length={MAX_ACTION_LENGTH})"
