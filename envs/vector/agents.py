"""The batched core as a Gymnasium ``VectorEnv`` with every agent one sub-env.

:class:`AgentVectorEnv` views a :class:`~orgteams.envs.vector.VectorHouseholdEnv` of
``N`` households with ``A`` agents as a ``gymnasium.vector.VectorEnv`` of ``N * A``
sub-envs (entry ``i * A + a`` is agent ``a`` of household ``i``), so one policy
drives every agent (parameter sharing) and Gymnasium's vector wrappers
(``RecordEpisodeStatistics``, ``NormalizeReward``, ``NumpyToTorch``...) and the code
written for them (CleanRL's loops) run on it as they are (``NumpyToTorch``: with the
``rl`` extra, and under ``NEXT_STEP``: ``SAME_STEP``'s ``final_obs`` is an object array,
as Gymnasium's own vector envs give it, which that wrapper cannot convert):

* spaces: ``single_observation_space`` / ``single_action_space`` one agent's,
  ``observation_space`` / ``action_space`` the batch's;
* ``metadata["autoreset_mode"]``: the core's, ``SAME_STEP`` or Gymnasium's default
  ``NEXT_STEP`` (``household_v0.agent_vector_env(..., autoreset_mode=...)``); the
  entries of one household end and restart together;
* ``step`` returns rewards ``(N * A,)`` float32 (the team's, per agent), flags
  ``(N * A,)`` bool and infos as Gymnasium's vector envs give them (a dict of arrays,
  each key with its ``_key`` mask): ``action_mask`` ``(N * A, 53)`` int8,
  ``invalid_action``, ``collision``, ``tick``, ``is_success``; at an episode's end
  ``final_obs`` / ``final_info`` (``SAME_STEP``, the latter with the episode's
  statistics under ``episode``) or ``episode_stats`` (``NEXT_STEP``); a top-level
  ``episode`` is left to ``RecordEpisodeStatistics``;
* ``reset(seed=s)`` seeds household ``i`` with ``s + i`` (its entries share it);
  ``options={"reset_mask": m}`` restarts the households whose entries ``m`` (``(N *
  A,)`` bool) selects, whole households only;
* ``render()``: one frame per entry (``render_mode="rgb_array"``, needs the ``render``
  extra) or text (``"ansi"``), an entry showing its household;
* ``call(name)`` / ``get_attr(name)``: ``"agent"`` and ``"household"`` per entry,
  ``"action_masks"`` each entry's mask; any other public attribute of the core (the
  entries share it) is read, or called once, and given to every entry.

sb3-contrib's ``MaskablePPO`` reads the masks through :meth:`AgentVectorEnv.action_masks`.
SB3 itself wants its own ``VecEnv`` class: :class:`~orgteams.envs.vector.sb3.AgentVecEnv`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv

from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.render.ansi import render_ansi
from orgteams.envs.vector.env import VectorHouseholdEnv

RENDER_MODES = ("rgb_array", "ansi")
# What an entry has of its own (call / get_attr); anything else is the core's.
ENTRY_ATTRIBUTES = ("agent", "household", "action_masks")


class AgentVectorEnv(VectorEnv):
    """``venv.num_envs * venv.num_agents`` sub-envs, one per agent (module docstring).

    Args:
        venv: The batched core (``household_v0.vector_env(...)``).
        render_mode: None, ``"rgb_array"`` or ``"ansi"``.
    """

    def __init__(self, venv: VectorHouseholdEnv, render_mode: str | None = None):
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be None or one of {RENDER_MODES}, "
                             f"got {render_mode!r}")
        self.venv = venv
        self.households, self.agents = venv.num_envs, venv.num_agents
        self.num_envs = self.households * self.agents
        self.render_mode = render_mode
        self.metadata = {"autoreset_mode": venv.autoreset_mode,
                         "render_modes": list(RENDER_MODES), "render_fps": 10}
        self.single_observation_space = venv.single_observation_space
        self.single_action_space = venv.single_action_space
        self.action_space = spaces.MultiDiscrete(np.full(self.num_envs, NUM_ACTIONS))
        self._masks: np.ndarray | None = None
        self._renderer = None

    @functools.cached_property
    def observation_space(self) -> spaces.Box:
        """The batch's space (built on first use, as the core's: its bounds are as large
        as a batch of observations)."""
        box = self.single_observation_space
        shape = (self.num_envs, *box.shape)
        return spaces.Box(np.broadcast_to(box.low, shape), np.broadcast_to(box.high, shape),
                          dtype=box.dtype)

    # ---- the vector API ----
    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """New episodes (module docstring: seeds per household, ``reset_mask``)."""
        super().reset(seed=seed if isinstance(seed, int) else None)
        options = dict(options or {})
        if "reset_mask" in options:
            options["reset_mask"] = self._households(options["reset_mask"])
        obs, infos = self.venv.reset(seed=seed, options=options)
        self._masks = self._entries(infos["action_mask"])
        return self._entries(obs), self._infos(infos)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                  np.ndarray, dict[str, Any]]:
        """One tick of every household; ``actions``: ``(N * A,)`` ids."""
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},) (one per agent of "
                             f"every household), got {acts.shape}")
        obs, rewards, terms, truncs, infos = self.venv.step(
            acts.reshape(self.households, self.agents))
        self._masks = self._entries(infos["action_mask"])
        return (self._entries(obs), self._entries(rewards), self._entries(terms),
                self._entries(truncs), self._infos(infos))

    def render(self) -> tuple[Any, ...] | None:
        """One frame (or text) per entry, its household's; None without a render_mode."""
        if self.render_mode is None:
            return None
        frames = []
        for i in range(self.households):
            world = self.venv.state(i)
            if self.render_mode == "ansi":
                frame = render_ansi(world)
            else:
                if self._renderer is None:
                    from orgteams.envs.render.renderer import PygameRenderer

                    self._renderer = PygameRenderer("rgb_array")
                frame = self._renderer.render(world)
            frames += [frame] * self.agents
        return tuple(frames)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name`` for every entry: an entry's own (``agent``, ``household``,
        ``action_masks``), else the core's public attribute, called once with
        ``args`` when it is a method."""
        if name == "agent":
            return tuple(self.venv.possible_agents) * self.households
        if name == "household":
            return tuple(i for i in range(self.households) for _ in range(self.agents))
        if name == "action_masks":
            return tuple(self.action_masks())
        if name == "render":
            return self.render()
        if name.startswith("_") or not hasattr(self.venv, name):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r} for its "
                                 f"entries (theirs: {', '.join(ENTRY_ATTRIBUTES)}; or a "
                                 "public attribute of the vector env they share)")
        value = getattr(self.venv, name)
        if callable(value):
            value = value(*args, **kwargs)
        return (value,) * self.num_envs

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """``call(name)``, as Gymnasium's vector envs do."""
        return self.call(name)

    def action_masks(self) -> np.ndarray:
        """``(N * A, 53)`` bool: the valid actions of every entry (sb3-contrib's hook)."""
        if self._masks is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._masks.astype(bool)

    def close_extras(self, **kwargs: Any) -> None:
        """Closes the renderer, if any, and the batched core (Gymnasium's ``close`` calls it)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self.venv.close()

    # ---- internals ----
    def _entries(self, array: np.ndarray) -> np.ndarray:
        """``(N, A, ...)`` -> ``(N * A, ...)``, a view where numpy can make one."""
        return array.reshape(self.num_envs, *array.shape[2:])

    def _per_entry(self, array: np.ndarray) -> np.ndarray:
        """``(N, ...)`` household values -> ``(N * A, ...)``, each repeated per agent."""
        return np.repeat(array, self.agents, axis=0)

    def _households(self, mask: Any) -> np.ndarray:
        """An entries' ``reset_mask`` as the households' (whole households only)."""
        m = np.asarray(mask)
        if m.dtype != np.bool_ or m.shape != (self.num_envs,):
            raise ValueError(f"options['reset_mask'] must be a bool array of shape "
                             f"({self.num_envs},), got {m.dtype} {m.shape}")
        per = m.reshape(self.households, self.agents)
        if not (per == per[:, :1]).all():
            raise ValueError(f"options['reset_mask'] must select whole households (all "
                             f"{self.agents} agents of each): the agents of a household "
                             "play one episode")
        return per[:, 0].copy()

    def _infos(self, infos: dict[str, Any]) -> dict[str, Any]:
        """The core's infos per entry, with Gymnasium's ``_key`` masks."""
        out = self._entry_infos(infos)
        if "final_obs" in infos:  # SAME_STEP
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(infos["_final_obs"]).tolist():
                for a in range(self.agents):
                    final_obs[i * self.agents + a] = infos["final_obs"][i][a]
            out["final_obs"], out["_final_obs"] = final_obs, self._per_entry(
                infos["_final_obs"])
            out["final_info"] = self._entry_infos(infos["final_info"])
            out["_final_info"] = self._per_entry(infos["_final_info"])
        return out

    def _entry_infos(self, infos: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in infos.items():
            if key.startswith("_") or key in ("final_obs", "final_info"):
                continue
            if isinstance(value, dict):  # statistics: (N,) arrays
                out[key] = {k: self._per_entry(v) for k, v in value.items()}
            elif value.ndim >= 2 and value.shape[1] == self.agents:  # (N, A, ...)
                out[key] = self._entries(value)
            else:  # (N,) household values
                out[key] = self._per_entry(value)
            flag = infos.get(f"_{key}")
            out[f"_{key}"] = self._per_entry(flag) if flag is not None else np.ones(
                self.num_envs, bool)
        return out


__all__ = ["AgentVectorEnv", "RENDER_MODES"]
