"""Stable-Baselines3 ``VecEnv``s with every agent one batch entry.

:class:`AgentVecEnv` turns a :class:`~orgteams.envs.vector.VectorHouseholdEnv` of ``N``
households with ``A`` agents into an SB3 ``VecEnv`` of ``N * A`` entries (entry
``i * A + a`` is agent ``a`` of household ``i``), so one policy drives every agent
(parameter sharing). Observations, rewards and dones are reshaped views of the
core's arrays; sb3-contrib's ``MaskablePPO`` reads the core's masks through
``action_masks()`` / ``env_method("action_masks")``. Finished households reset in
the same step (SB3's convention, which is the core's): the finished episode's last
observation is in ``info["terminal_observation"]``, ``info["TimeLimit.truncated"]``
says it was cut short (SB3 then bootstraps its value) and ``info["episode"]`` holds
its return ``r``, length ``l`` and ``is_success`` (what SB3 logs).
:class:`ScalarAgentVecEnv` is the same interface over ``parallel_env`` copies stepped
one by one (the reference path, and the one for settings the core does not batch).

Needs the ``rl`` extra (``pip install "orgteams[rl]"``); nothing in the core imports
this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv

from orgteams.envs import household_v0
from orgteams.envs.vector.env import VECTOR_OBS_MODES, VectorHouseholdEnv

MASK_METHOD = "action_masks"


class AgentEntries(VecEnv):
    """What every agents-as-entries ``VecEnv`` shares: masks for ``MaskablePPO`` and
    the parts of SB3's interface that address single entries (there are no per-entry
    envs to reach, so those raise, naming the attribute)."""

    def __init__(self, num_envs: int, observation_space: spaces.Space,
                 action_space: spaces.Space):
        super().__init__(num_envs, observation_space, action_space)
        self._actions: np.ndarray | None = None

    def action_masks(self) -> np.ndarray:
        """``(num_envs, n_actions)`` bool: the valid actions of every entry."""
        raise NotImplementedError

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def env_method(self, method_name: str, *args, indices: Any = None, **kwargs) -> list:
        if method_name == MASK_METHOD:
            return list(self.action_masks()[self._get_indices(indices)])
        raise AttributeError(f"{type(self).__name__} has no per-env method {method_name!r}")

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == MASK_METHOD

    def get_attr(self, attr_name: str, indices: Any = None) -> list:
        if attr_name == "render_mode":  # SB3 asks at construction; entries do not draw
            return [None] * len(self._get_indices(indices))
        raise AttributeError(f"{type(self).__name__} has no per-env attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"{type(self).__name__} cannot set {attr_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._get_indices(indices))

    def _get_indices(self, indices: None | int | Iterable[int]) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        return [indices] if isinstance(indices, int) else list(indices)


class AgentVecEnv(AgentEntries):
    """SB3 ``VecEnv`` of ``venv.num_envs * venv.num_agents`` entries over the batched
    core (module docstring). ``reset()`` seeds household ``i`` with ``seed + i`` when
    SB3 set a seed (``model = MaskablePPO(..., seed=s)`` or ``env.seed(s)``)."""

    def __init__(self, venv: VectorHouseholdEnv):
        if venv.autoreset_mode is not AutoresetMode.SAME_STEP:
            raise ValueError("AgentVecEnv needs a vector env that resets in the same step "
                             "(SB3's convention): autoreset_mode=AutoresetMode.SAME_STEP, "
                             f"got {venv.autoreset_mode.value}")
        self.venv = venv
        self.households, self.agents = venv.num_envs, venv.num_agents
        super().__init__(self.households * self.agents, venv.single_observation_space,
                         venv.single_action_space)
        self._masks: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        seed = self._seeds[0]
        obs, infos = self.venv.reset(seed=seed)
        self._reset_seeds()
        self._masks = self._entries(infos["action_mask"]).astype(bool)
        return self._entries(obs)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        if self._actions is None:
            raise RuntimeError("call step_async(actions) before step_wait()")
        actions = self._actions.reshape(self.households, self.agents)
        self._actions = None
        obs, rewards, terms, truncs, infos = self.venv.step(actions)
        self._masks = self._entries(infos["action_mask"]).astype(bool)
        dones = self._entries(terms | truncs)
        entry_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if "final_obs" in infos:
            self._finish(entry_infos, infos, terms, truncs)
        return (self._entries(obs), self._entries(rewards).astype(np.float32), dones,
                entry_infos)

    def action_masks(self) -> np.ndarray:
        if self._masks is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._masks

    def close(self) -> None:
        self.venv.close()

    def _entries(self, array: np.ndarray) -> np.ndarray:
        """``(N, A, ...)`` -> ``(N * A, ...)``, a view where numpy can make one."""
        return array.reshape(self.num_envs, *array.shape[2:])

    def _finish(self, entry_infos: Sequence[dict], infos: dict[str, Any],
                terms: np.ndarray, truncs: np.ndarray) -> None:
        """SB3's end-of-episode keys for the entries of finished households."""
        final_obs, episode = infos["final_obs"], infos["final_info"]["episode"]
        for i in np.flatnonzero(infos["_final_obs"]).tolist():
            stats = {key: value[i].item() for key, value in episode.items()}
            cut = bool(truncs[i, 0] and not terms[i, 0])
            for a in range(self.agents):
                entry_infos[i * self.agents + a].update(
                    terminal_observation=final_obs[i][a], episode=dict(stats),
                    is_success=stats["is_success"], **{"TimeLimit.truncated": cut})


class ScalarAgentVecEnv(AgentEntries):
    """The scalar path: ``copies`` ``household_v0.parallel_env(**env_kwargs)`` copies
    stepped one by one in Python, every agent one entry (``num_envs = copies *
    agents``; copy ``i`` is seeded ``seed + i``, as household ``i`` of the batched
    core, so both adapters play the same episodes). ``obs_mode`` is ``"flat"`` (the
    default, as the core's) or ``"image"``.

    Episodes restart by themselves (SB3's convention: the finished episode's last
    observation is in ``info["terminal_observation"]``). ``action_masks()`` returns
    the env's masks for MaskablePPO.
    """

    def __init__(self, copies: int = 8, seed: int = 0, **env_kwargs: Any):
        # The batched core's default and modes: SB3 stacks one array per agent, and
        # parallel_env's own default ("array", a dict) was stacked as an object array
        # ("You must use MultiInputPolicy", then nothing MultiInputPolicy could read).
        obs_mode = env_kwargs.setdefault("obs_mode", "flat")
        if obs_mode not in VECTOR_OBS_MODES:
            raise ValueError(f"obs_mode must be one of {VECTOR_OBS_MODES} for "
                             f"ScalarAgentVecEnv, got {obs_mode!r}")
        self.envs = [household_v0.parallel_env(**env_kwargs) for _ in range(copies)]
        first = self.envs[0]
        self.names = list(first.possible_agents)
        agent = self.names[0]
        super().__init__(copies * len(self.names), first.observation_space(agent),
                         first.action_space(agent))
        self._seed = seed
        self._masks = np.ones((self.num_envs, self.action_space.n), bool)

    def reset(self) -> np.ndarray:
        obs = []
        for i, env in enumerate(self.envs):
            o, infos = env.reset(seed=self._seed + i)
            obs.append(self._collect(i, o, infos))
        return np.concatenate(obs)

    def step_wait(self):
        n = len(self.names)
        obs, rewards, dones, infos = [], [], [], []
        for i, env in enumerate(self.envs):
            acts = self._actions[i * n:(i + 1) * n]
            o, r, term, trunc, info = env.step(
                {a: int(x) for a, x in zip(self.names, acts)})
            done = not env.agents
            rewards.extend(r[a] for a in self.names)
            dones.extend([done] * n)
            # SB3 bootstraps the value of an episode cut short under this key.
            step_infos = [{**info[a], "TimeLimit.truncated": trunc[a] and not term[a]}
                          for a in self.names]
            if done:
                last = self._stack(o)
                episode = env.episode_statistics()  # what SB3 logs (return, length)
                for k, si in enumerate(step_infos):
                    si["terminal_observation"] = last[k]
                    si["episode"] = dict(episode)
                o, info = env.reset()
            obs.append(self._collect(i, o, info))
            infos.extend(step_infos)
        return (np.concatenate(obs), np.array(rewards, np.float32), np.array(dones),
                infos)

    def _stack(self, obs: dict) -> np.ndarray:
        return np.stack([obs[a] for a in self.names])

    def _collect(self, i: int, obs: dict, infos: dict) -> np.ndarray:
        n = len(self.names)
        for k, a in enumerate(self.names):
            self._masks[i * n + k] = infos[a]["action_mask"]
        return self._stack(obs)

    def action_masks(self) -> np.ndarray:
        return self._masks.copy()

    def close(self) -> None:
        for env in self.envs:
            env.close()
