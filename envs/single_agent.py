"""One agent of the household as a single-agent ``gymnasium.Env``; its teammates are given.

``household_v0.single_agent_env(agent="agent_1", teammates=...)`` is the env an RL
learner sees when it joins a team of fixed partners (ad-hoc teamwork, as Overcooked-AI
is used with fixed partners): ``reset`` / ``step(action)`` for ``agent`` alone, its
observation in ``obs_mode`` (``"flat"`` by default), the team's reward, the episode's
``terminated`` / ``truncated``, and ``agent``'s info of that tick (the scalar env's
fixed keys: ``tick``, ``is_success``, the event counts, ``action_mask`` unless it is in
the observation). ``action_masks()`` returns the mask (sb3-contrib's ``MaskablePPO``).

Teammates (``teammates=``; one for all, or a dict by agent id):

``"random"``
    a valid primitive action drawn uniformly each tick (from the env's ``np_random``,
    so ``reset(seed=...)`` replays them);
``"wait"``
    always action 0;
a callable ``policy(observation, action_mask) -> action``
    a frozen RL policy, asked each tick with that teammate's own observation (in the
    env's ``obs_mode``) and mask, e.g. ``lambda o, m: int(model.predict(o,
    action_masks=m, deterministic=True)[0])`` for an sb3-contrib model, or
    :func:`orgteams.agents.policy.load_policy`;
a :class:`~orgteams.envs.play.keyboard.Teammates` object
    high-level teammates that decide in decision rounds (planners, LLM members, under
    any organization): :func:`orgteams.play.teammates.make_teammates` builds them
    (``make_teammates("planner", organization="leader")``, ``make_teammates("local")``).
    They play in a :class:`~orgteams.envs.highlevel.HighLevelEnv` over the household,
    in which the learner's agent is the player (``overlay.you``): its action is
    ``primitive:<id>``, one tick per ``step``, and under an organization it holds
    the seat the organization gives that agent (a leader's orders reach it only as
    words it cannot read).

Determinism: ``reset(seed=s)`` replays the episode, and with random, waiting or
deterministic callable teammates the whole run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.core.masks import mask_rows
from orgteams.envs.highlevel.highlevel_env import PRIMITIVE, HighLevelEnv
from orgteams.envs.household import EVENT_COUNTS, RENDER_MODES, HouseholdEnv

TeammatePolicy = Callable[[Any, np.ndarray], int]
"""A per-tick teammate: ``policy(observation, action_mask) -> action id``."""
SIMPLE = ("random", "wait")


class SingleAgentEnv(gymnasium.Env):
    """``agent`` of a household whose teammates are given (module docstring).

    Args:
        agent: The learner's agent id, e.g. ``"agent_0"``.
        teammates: ``"random"``, ``"wait"``, a :data:`TeammatePolicy`, a ``Teammates``
            object, or a dict from each teammate's id to one of those.
        obs_mode: The learner's (and callable teammates') observations: ``"flat"``
            (default), ``"image"``, ``"array"`` or ``"text"``.
        render_mode: None, ``"human"``, ``"rgb_array"`` or ``"ansi"``.
        **household_kwargs: As :class:`~orgteams.envs.household.HouseholdEnv`
            (``layout``, ``task``, ``num_agents``, ``max_ticks``, ``reward_shaping``,
            ``action_mask_in_obs``...).
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 10}

    def __init__(self, agent: str = "agent_0", teammates: Any = "random",
                 obs_mode: str = "flat", render_mode: str | None = None,
                 **household_kwargs: Any):
        base = HouseholdEnv(obs_mode=obs_mode, render_mode=render_mode, **household_kwargs)
        if agent not in base.possible_agents:
            raise ValueError(f"agent {agent!r} is not one of {base.possible_agents}")
        self.agent = agent
        self.teammate_ids = [a for a in base.possible_agents if a != agent]
        self.policies = _policies(teammates, self.teammate_ids)
        # Teammates objects, each with the agents it plays (one call per tick for them)
        self.groups: list[tuple[Any, list[str]]] = []
        for a, p in self.policies.items():
            if _is_team(p):
                group = next((g for g in self.groups if g[0] is p), None)
                if group is None:
                    self.groups.append((p, [a]))
                else:
                    group[1].append(a)
        self.base = base
        self.highlevel = HighLevelEnv(base, observations=False) if self.groups else None
        if self.highlevel is not None:
            base.overlay.you = agent  # the player of the teammates' rounds: the learner
        self.render_mode = render_mode
        self.observation_space = base.observation_space(agent)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self._mask: np.ndarray | None = None
        self._obs: dict[str, Any] = {}  # the teammates' observations (plain path)
        self._infos: dict[str, dict] = {}

    # ---- the Gymnasium API ----
    def reset(self, *, seed: int | None = None, options: dict | None = None
              ) -> tuple[Any, dict[str, Any]]:
        """A new episode (``options`` as the household's: ``{"state": s}``)."""
        super().reset(seed=seed)
        if self.highlevel is None:
            self._obs, self._infos = self.base.reset(seed=seed, options=options)
            return self._learner(self._obs, self._infos)
        self.highlevel.reset(seed=seed, options=options)
        for teammates, _ in self.groups:
            teammates.reset(self.highlevel, seed)
        counts = {"tick": 0, "is_success": False, **EVENT_COUNTS}
        return self._observed(counts)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One tick: ``action`` for the learner, the teammates' for them."""
        if self.base.world is None:
            raise RuntimeError("call reset() before step()")
        if not self.base.agents:
            raise RuntimeError("the episode is over; call reset() to start a new one")
        act = self.base._check_action(self.agent, action)
        if self.highlevel is None:
            actions = {a: self._per_tick(a, p) for a, p in self.policies.items()}
            actions[self.agent] = act
            self._obs, rew, term, trunc, self._infos = self.base.step(actions)
            obs, info = self._learner(self._obs, self._infos)
            return obs, float(rew[self.agent]), bool(term[self.agent]), \
                bool(trunc[self.agent]), info
        env = self.highlevel
        actions = {a: f"{PRIMITIVE}{self._per_tick(a, p)}" for a, p in self.policies.items()
                   if not _is_team(p)}
        for teammates, agents in self.groups:
            live = [a for a in agents if a in env.agents]
            if live:
                actions.update({a: x for a, x in teammates(env, live).items() if a in live})
        actions[self.agent] = f"{PRIMITIVE}{act}"
        ticks: list[dict] = []
        _, rew, term, trunc, _ = env.step(
            actions, on_tick=lambda before, joint, after, infos: ticks.append(infos))
        info = ticks[-1][self.agent]
        counts = {k: v for k, v in info.items() if k not in ("events", "episode")}
        obs, info = self._observed(counts)
        return obs, float(rew[self.agent]), bool(term[self.agent]), \
            bool(trunc[self.agent]), info

    def render(self) -> Any:
        return self.base.render()

    def close(self) -> None:
        for teammates, _ in self.groups:
            closer = getattr(teammates, "close", None)
            if callable(closer):
                closer()
        self.base.close()

    # ---- extras ----
    def action_masks(self) -> np.ndarray:
        """The learner's valid actions now, ``(53,)`` bool (sb3-contrib's hook)."""
        if self._mask is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._mask.astype(bool)

    def episode_statistics(self) -> dict[str, Any]:
        """The household's episode statistics so far (:meth:`HouseholdEnv.episode_statistics`)."""
        return self.base.episode_statistics()

    # ---- internals ----
    def _learner(self, obs: dict, infos: dict) -> tuple[Any, dict[str, Any]]:
        """The learner's observation and info from the household's (plain path)."""
        # Copies: the household shares read-only mask rows across ticks, and Gymnasium
        # wants every call's data to be the caller's own.
        self._mask = self._mask_of(self.agent, obs, infos).copy()
        info = dict(infos[self.agent])
        mine = obs[self.agent]
        if "action_mask" in info:
            info["action_mask"] = self._mask
        if self.base.action_mask_in_obs:
            mine = {"observation": mine["observation"], "action_mask": self._mask}
        return mine, info

    def _observed(self, info: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The learner's observation now and ``info`` with its mask (high-level path,
        where the household builds no observations of its own)."""
        obs, self._mask = self.base.observe(self.agent)
        if self.base.with_action_masks and not self.base.action_mask_in_obs:
            info["action_mask"] = self._mask
        return obs, info

    def _mask_of(self, agent: str, obs: dict, infos: dict) -> np.ndarray:
        """``agent``'s mask, wherever this mode puts it (computed when nowhere)."""
        mask = infos[agent].get("action_mask")
        if mask is None and self.base.action_mask_in_obs:
            mask = obs[agent]["action_mask"]
        if mask is None:
            mask = mask_rows(self.base.world, [self.base.agent_index[agent]])[0]
        return mask

    def _per_tick(self, agent: str, policy: Any) -> int:
        """A per-tick teammate's action now."""
        if policy == "wait":
            return 0
        if self.highlevel is None:
            obs, mask = self._obs.get(agent), self._mask_of(agent, self._obs, self._infos)
        elif policy == "random":  # the mask is all it needs
            obs, mask = None, mask_rows(self.base.world, [self.base.agent_index[agent]])[0]
        else:
            obs, mask = self.base.observe(agent)
        if policy == "random":
            return int(self.np_random.choice(np.flatnonzero(mask)))
        action = policy(obs, mask)
        return self.base._check_action(agent, action)


def _is_team(policy: Any) -> bool:
    """A ``Teammates`` object: high-level teammates with ``reset(env, seed)``."""
    return callable(policy) and callable(getattr(policy, "reset", None)) \
        and not isinstance(policy, str)


def _policies(teammates: Any, ids: list[str]) -> dict[str, Any]:
    """Each teammate's policy; one clear line for anything else."""
    given = dict(teammates) if isinstance(teammates, Mapping) else dict.fromkeys(ids, teammates)
    unknown = sorted(set(given) - set(ids))
    if unknown:
        raise ValueError(f"teammates names {unknown}, which are not teammates; they are "
                         f"{ids}")
    missing = [a for a in ids if a not in given]
    if missing:
        raise ValueError(f"teammates gives no policy for {missing}")
    for a, p in given.items():
        if isinstance(p, str) and p not in SIMPLE:
            raise ValueError(
                f"teammate {a}: {p!r} is not a per-tick policy ({', '.join(SIMPLE)}); for "
                "planners or LLM members pass "
                f"orgteams.play.teammates.make_teammates({p!r}, organization=...)")
        if not isinstance(p, str) and not callable(p):
            raise ValueError(f"teammate {a}: expected 'random', 'wait', a callable "
                             f"policy(observation, action_mask) or a Teammates object, "
                             f"got {type(p).__name__}")
    return given


__all__ = ["SingleAgentEnv", "TeammatePolicy"]
