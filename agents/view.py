"""What a team member may read of the episode: queries only, never the env itself.

The round loop hands members a :class:`MemberView` where it used to hand them the
:class:`~orgteams.envs.highlevel.highlevel_env.HighLevelEnv`: the same questions a member asks
(its description and memory, the goal and progress, the actions open to it, whether
it must decide), and none of the env's levers (``step``, ``reset``, ``set_idle``,
``on_tick``, rendering) or attribute writes. A scripted expert (the planner) also
reads the world state and the navigator, as a teammate watching the house would.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orgteams.envs.core.navigation import Navigator
    from orgteams.envs.core.state import HouseholdState
    from orgteams.envs.core.tasks import TaskSpec
    from orgteams.envs.highlevel.highlevel_env import HighLevelAction, HighLevelEnv
    from orgteams.envs.observe.memory import AgentMemory

__all__ = ["MemberView"]


class MemberView:
    """A read-only view of a :class:`HighLevelEnv` for team members (one per episode)."""

    __slots__ = ("_env",)

    def __init__(self, env: HighLevelEnv) -> None:
        object.__setattr__(self, "_env", env)

    def __setattr__(self, name: str, value: Any) -> None:
        # A view never changes what it shows.
        raise AttributeError(f"{type(self).__name__} is read-only (cannot set {name!r})")

    def __reduce__(self) -> tuple[type[MemberView], tuple[HighLevelEnv]]:
        # Pickle rebuilds it through __init__ (its own copy of the env), not by setting
        # the slot, which __setattr__ refuses: an env with planner teammates is shipped
        # whole to SubprocVecEnv workers and ray actors.
        return (type(self), (self._env,))

    @property
    def world(self) -> HouseholdState:
        """The current world state (read it; the env replaces it every tick)."""
        return self._env.world

    @property
    def task(self) -> TaskSpec:
        """The episode's task (its goal's size: a policy member's observations scale by it)."""
        return self._env.task

    @property
    def agent_index(self) -> Mapping[str, int]:
        """Agent id -> index in the world's per-agent lists."""
        return MappingProxyType(self._env.agent_index)

    def describe(self, agent: str) -> str:
        """What ``agent`` sees now, as text."""
        return self._env.describe(agent)

    def describe_goal(self) -> str:
        """The goal, as text."""
        return self._env.describe_goal()

    def progress(self) -> dict[str, Any]:
        """Goal predicates satisfied and remaining, and units done of the total."""
        return self._env.progress()

    @property
    def agents(self) -> tuple[str, ...]:
        """Agents still in the episode."""
        return tuple(self._env.agents)

    @property
    def possible_agents(self) -> tuple[str, ...]:
        """Every agent of the env."""
        return tuple(self._env.possible_agents)

    @property
    def nav(self) -> Navigator:
        """Shortest paths on the static grid (distances, goals of rooms and furniture)."""
        return self._env.nav

    @property
    def ticks(self) -> int:
        """Primitive env ticks played so far in this episode."""
        return self._env.ticks

    @property
    def rounds(self) -> int:
        """Decision rounds played so far in this episode."""
        return self._env.rounds

    def memory(self, agent: str) -> AgentMemory:
        """What ``agent`` believes about where things are (its own env memory)."""
        return self._env.memory(agent)

    def available_actions(self, agent: str) -> list[HighLevelAction]:
        """The high-level actions ``agent`` may choose now."""
        return self._env.available_actions(agent)

    def is_available(self, agent: str, action: str) -> bool:
        """Whether ``action`` (an id) is one of :meth:`available_actions` of ``agent``."""
        return self._env.is_available(agent, action)

    def needs_decision(self, agent: str) -> bool:
        """Whether ``agent``'s plan ended (it must choose a new action)."""
        return self._env.needs_decision(agent)

    def current(self, agent: str) -> HighLevelAction | None:
        """The high-level action ``agent`` is carrying out, if any."""
        return self._env.current(agent)
