"""The household environment behind the PettingZoo ``ParallelEnv`` API.

A thin shell over the pure dynamics in :mod:`orgteams.envs.core.dynamics`: it samples
episodes with its seeded generator, validates actions, builds observations and
rewards, and renders on request. See :mod:`orgteams.envs.household_v0` for the
documented constructors.
"""

from __future__ import annotations

import dataclasses
import string
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.core.dynamics import EVENT_TYPES, transition
from orgteams.envs.core.layout import Layout, load_layout
from orgteams.envs.core.limits import MAX_GRID_SIDE, MAX_TICKS, check_int
from orgteams.envs.core.masks import MaskCache, mask_rows
from orgteams.envs.core.rewards import TeamReward, shaping_level
from orgteams.envs.core.start import make_episode
from orgteams.envs.core.state import HouseholdState
from orgteams.envs.core.tasks import MAX_GOAL_PREDICATES, TaskSpec, load_task
from orgteams.envs.observe.array_obs import ArrayObserver, observation_space
from orgteams.envs.observe.global_state import StateEncoder, state_space
from orgteams.envs.observe.rl_obs import (
    batch,
    default_image_scale,
    encode_flat,
    encode_image,
    flat_scale,
    flat_space,
    image_space,
)
from orgteams.envs.observe.text import describe, describe_goal, text_length_bound
from orgteams.envs.render.ansi import render_ansi
from orgteams.envs.render.overlay import Overlay
from orgteams.errors import UserError

OBS_MODES = ("array", "text", "flat", "image")
RENDER_MODES = ("human", "rgb_array", "ansi")
TEXT_SPACE_LENGTH = 8192
# Every per-agent info has these keys, each the number of the agent's events of that
# kind this tick (a team event, a subgoal, counts for everyone): fixed keys and plain
# numbers, so tensor libraries (TorchRL, Tianshou) stack infos as they are.
EVENT_COUNTS = dict.fromkeys(EVENT_TYPES, 0)


def agent_ids(n: int) -> list[str]:
    """``agent_0 ... agent_{n-1}``: the ids of an env with ``n`` agents (agent ``i`` is
    index ``i`` of the world's per-agent lists)."""
    return [f"agent_{i}" for i in range(n)]


class HouseholdEnv(ParallelEnv):
    """Gridworld household with room-limited partial observation (PettingZoo Parallel)."""

    metadata = {"name": "household_v0", "render_modes": list(RENDER_MODES),
                "render_fps": 10, "is_parallelizable": True}

    def __init__(self, layout: str | Layout = "apartment", task: str | TaskSpec =
                 "prepare_afternoon_tea", num_agents: int = 3, obs_mode: str = "array",
                 render_mode: str | None = None, view_radius: int = 7,
                 full_observability: bool = False, reward_shaping: bool | str = False,
                 max_ticks: int | None = None, render_fps: int | None = None,
                 render_options: dict | None = None, units: int | tuple[int, int] | None = None,
                 action_masks: bool = True, action_mask_in_obs: bool = False,
                 image_scale: int | None = None, observations: bool = True,
                 rich_infos: bool = False, max_cycles: int | None = None):
        """Arguments as the module docstring of :mod:`orgteams.envs.household_v0` says;
        ``max_cycles`` is PettingZoo's name for ``max_ticks`` (give one, or both equal).
        ``rich_infos=True`` adds each agent's ``events`` (a list of dicts) to every info
        and the episode's statistics (``episode``) to its last ones: what the team
        layers and the keyboard player read; RL code gets fixed-shape infos without it."""
        # 0 or None: the task's tick limit (the batched and JAX cores read them alike).
        if max_ticks is not None:
            check_int(max_ticks, "max_ticks", 0, MAX_TICKS)
        if max_cycles is not None:
            check_int(max_cycles, "max_cycles", 0, MAX_TICKS)
            if max_ticks is not None and max_ticks != max_cycles:
                raise ValueError(f"max_cycles={max_cycles!r} and max_ticks={max_ticks!r} "
                                 "name the same tick limit; give one of them")
            max_ticks = max_cycles
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be None or one of {RENDER_MODES}, "
                             f"got {render_mode!r}")
        if not isinstance(num_agents, int | np.integer) or num_agents < 1:
            raise ValueError(f"num_agents must be a positive integer, got {num_agents!r}")
        # A view wider than the largest grid sees nothing more; past it the observation
        # buffers alone outgrow memory (view_radius=3000: 10 GiB, deep inside numpy).
        check_int(view_radius, "view_radius", 1, MAX_GRID_SIDE)
        self.layout = layout if isinstance(layout, Layout) else load_layout(layout)
        self.task = task if isinstance(task, TaskSpec) else load_task(task)
        if units is not None:
            self.task = _with_units(self.task, units)
        missing = sorted(self.task.targets() - {f.type for f in self.layout.furniture})
        if missing:
            raise UserError(f"task {self.task.name!r} needs {', '.join(missing)}, which "
                            f"layout {self.layout.name!r} does not have")
        self.obs_mode, self.render_mode = obs_mode, render_mode
        self.view_radius, self.full_observability = view_radius, full_observability
        self.reward_shaping, self.max_ticks = shaping_level(reward_shaping), max_ticks
        self._reward = TeamReward(self.reward_shaping)
        self.action_mask_in_obs = action_mask_in_obs
        self.with_action_masks = action_masks or action_mask_in_obs
        # One place for the mask per mode: the observation with action_mask_in_obs,
        # else the info (action_masks), else nowhere.
        self._mask_in_info = self.with_action_masks and not action_mask_in_obs
        self.rich_infos = bool(rich_infos)
        self._mask_cache = MaskCache()
        self.render_fps = render_fps or self.metadata["render_fps"]
        # Passed to PygameRenderer: show_fov, fov_agents, cell_size, font_path, title.
        self.render_options = dict(render_options or {})
        self.possible_agents = agent_ids(int(num_agents))
        self.agent_index = {a: i for i, a in enumerate(self.possible_agents)}
        self._all_indices = list(range(len(self.possible_agents)))
        self.agents: list[str] = []
        self.display_names: list[str] | None = None
        self.overlay = Overlay()
        self.image_scale = image_scale or default_image_scale(view_radius)
        if self.image_scale < 1:
            raise ValueError(f"image_scale must be >= 1, got {image_scale}")
        self.text_length = max(TEXT_SPACE_LENGTH, text_length_bound(
            self.layout, self.task, len(self.possible_agents)))
        space = self._make_obs_space(obs_mode, view_radius)
        if action_mask_in_obs:  # PettingZoo's convention for masked observations
            space = spaces.Dict({"observation": space, "action_mask": spaces.Box(
                0, 1, (NUM_ACTIONS,), np.int8)})
        self._obs_spaces = {a: space for a in self.possible_agents}
        act = spaces.Discrete(NUM_ACTIONS)
        self._act_spaces = {a: act for a in self.possible_agents}
        self.np_random, self.np_random_seed = seeding.np_random(None)
        self.world: HouseholdState | None = None
        self._observer: ArrayObserver | None = None
        self._renderer = None
        self._state_encoder: StateEncoder | None = None
        self._masks = None  # the current world's action masks, one row per agent
        self._stats = _fresh_stats()
        # False for wrappers that build their own observations (HighLevelEnv): reset()
        # and step() return None for every agent instead of an observation nobody reads.
        self.observations = bool(observations)

    # ---- PettingZoo API ----
    def observation_space(self, agent: str) -> spaces.Space:
        """``agent``'s observation space (set by ``obs_mode``)."""
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """``agent``'s ``Discrete(53)`` action space."""
        return self._act_spaces[agent]

    @property
    def state_space(self) -> spaces.Box:
        """The space of :meth:`state` (fixed per env: layout and number of agents)."""
        return state_space(self.layout, len(self.possible_agents), self.task.units[1])

    def state(self) -> np.ndarray:
        """The global state for centralized critics (:mod:`orgteams.envs.observe.global_state`)."""
        if self.world is None:
            raise RuntimeError("call reset() before state()")
        if self._state_encoder is None:
            self._state_encoder = StateEncoder(self.layout, len(self.possible_agents))
        return self._state_encoder.encode(self.world)

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode: a new one from ``seed``, or from ``options={"state": s}`` (a
        :class:`HouseholdState` with this env's number of agents: tests, replays)."""
        state = (options or {}).get("state")
        if seed is not None:
            self.np_random, self.np_random_seed = seeding.np_random(seed)
        if state is None:
            self.world = make_episode(self.layout, self.task, len(self.possible_agents),
                                      self.np_random)
        elif len(state.agent_pos) != len(self.possible_agents):
            raise ValueError(f"options['state'] has {len(state.agent_pos)} agents, env has "
                             f"{len(self.possible_agents)}")
        else:
            self.world = state
        self._observer = ArrayObserver(self.world.scene, self.view_radius,
                                       self.full_observability, previous=self._observer)
        self.agents = list(self.possible_agents)
        self.overlay.clear()
        self._reward.reset()
        self._stats = _fresh_stats()
        infos = {a: {"tick": 0, "is_success": False, **EVENT_COUNTS} for a in self.agents}
        masks = self._current_masks()
        if masks is not None and self._mask_in_info:
            for info, mask in zip(infos.values(), masks):
                info["action_mask"] = mask
        if self.rich_infos:
            for info in infos.values():
                info["events"] = []
        if self.render_mode == "human":
            self.render()
        return self._observations(), infos

    def step(self, actions: dict[str, Any]):
        """One tick of every agent's action (PettingZoo's parallel ``step``).

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, dicts by agent.

        Raises:
            RuntimeError: Called before :meth:`reset` or after the episode ended.
            ValueError: An action id outside the action space.
        """
        if self.world is None:
            raise RuntimeError("call reset() before step()")
        if not self.agents:
            raise RuntimeError("the episode is over; call reset() to start a new one")
        index = self.agent_index
        joint = [0] * len(self.possible_agents)
        for agent, action in actions.items():
            i = index.get(agent)
            if i is None:
                raise ValueError(f"unknown agent {agent!r}; agents are {self.possible_agents}")
            # Speed: a plain in-range int (the common case) needs no further checks.
            if type(action) is not int or not 0 <= action < NUM_ACTIONS:
                action = self._check_action(agent, action)
            joint[i] = action
        before = self.world
        self.world, events = transition(before, joint)
        world = self.world
        done = world.success
        tick = world.tick
        truncated = tick >= (self.max_ticks or world.scene.step_limit) and not done
        rewards = self._reward(before, world, events, done)
        agents = self.agents
        masks = self._current_masks(before, events)
        rich = self.rich_infos
        # the events list made with each info (not added after: 256 agents a tick)
        if masks is None or not self._mask_in_info:
            if rich:
                # copies of one dict (each its own events list): a third of the cost
                # of building 256 of them key by key
                blank = {"tick": tick, "is_success": done, **EVENT_COUNTS, "events": None}
                infos = {}
                for a in agents:
                    info = infos[a] = blank.copy()
                    info["events"] = []
            else:
                infos = {a: {"tick": tick, "is_success": done, **EVENT_COUNTS} for a in agents}
        elif rich:
            infos = {a: {"tick": tick, "is_success": done, **EVENT_COUNTS, "action_mask": m,
                         "events": []} for a, m in zip(agents, masks)}
        else:
            infos = {a: {"tick": tick, "is_success": done, **EVENT_COUNTS, "action_mask": m}
                     for a, m in zip(agents, masks)}
        self._stats["r"] += rewards
        if events:
            names = self.possible_agents
            stats = self._stats
            for e in events:
                kind = e.type
                if kind == "invalid_action":
                    stats["invalid_actions"] += 1
                elif kind == "collision":
                    stats["collisions"] += 1
                if e.agent < 0:  # a team event (a subgoal): everyone hears of it
                    for info in infos.values():
                        info[kind] += 1
                        if rich:
                            info["events"].append(e.to_dict())
                elif (info := infos.get(names[e.agent])) is not None:
                    info[kind] += 1
                    if rich:
                        info["events"].append(e.to_dict())
        obs = self._observations()
        terms = dict.fromkeys(agents, done)
        truncs = dict.fromkeys(agents, truncated)
        rew = dict.fromkeys(agents, rewards)
        if done or truncated:
            self.agents = []
            if rich:
                episode = self.episode_statistics()
                for info in infos.values():
                    info["episode"] = dict(episode)
        if self.render_mode == "human":
            self.render()
        return obs, rew, terms, truncs, infos

    def render(self):
        """Draws the current state in the env's ``render_mode`` (``human``, ``rgb_array``,
        ``ansi``).

        Raises:
            RuntimeError: Called before :meth:`reset`.
        """
        if self.world is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn("render() called without a render_mode; pass "
                                  "render_mode='human', 'rgb_array' or 'ansi' to the env.")
            return None
        if self.render_mode == "ansi":
            return render_ansi(self.world)
        if self._renderer is None:
            from orgteams.envs.render.renderer import PygameRenderer

            self._renderer = PygameRenderer(self.render_mode, fps=self.render_fps,
                                            **self.render_options)
        return self._renderer.render(self.world, self.overlay, self.display_names)

    def close(self):
        """Closes the window or off-screen renderer, if one was made."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def __getstate__(self) -> dict:
        # A window or its surfaces do not pickle: a copy starts without one and opens
        # its own on the next render().
        state = dict(self.__dict__)
        state["_renderer"] = None
        return state

    def observe(self, agent: str) -> tuple[Any, np.ndarray]:
        """``agent``'s observation of the current world in this env's ``obs_mode`` (the
        ``{"observation", "action_mask"}`` dict with ``action_mask_in_obs``) and its
        action mask, also with ``observations=False``: for wrappers that step the
        household their own way (the single-agent env under high-level teammates)."""
        if self.world is None:
            raise RuntimeError("call reset() before observe()")
        i = self.agent_index[agent]
        mask = mask_rows(self.world, [i])[0]
        obs = self._encode([agent], [i])[0]
        if self.action_mask_in_obs:
            obs = {"observation": obs, "action_mask": mask}
        return obs, mask

    # ---- extras for LLM agents, planners and tools ----
    def describe(self, agent: str) -> str:
        """What ``agent`` sees now, as text (stable object ids such as ``cup_2``)."""
        return describe(self.world, self.agent_index[agent], self.display_names,
                        self.full_observability)

    def describe_goal(self) -> str:
        """The episode's goal as text (e.g. ``ON(cupcake, coffee_table): 2``)."""
        return describe_goal(self.world)

    def progress(self) -> dict[str, Any]:
        """Goal predicates with satisfied and remaining units."""
        w = self.world
        return {"satisfied": [f"{p}" for p, h in zip(w.scene.goal, w.progress) if h >= p.count],
                "remaining": [f"{p}" for p, h in zip(w.scene.goal, w.progress) if h < p.count],
                "units_done": sum(w.progress), "units_total": sum(p.count for p in w.scene.goal)}

    # ---- internals ----
    def _check_action(self, agent: str, action: Any) -> int:
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        if isinstance(action, bool | np.bool_) or not isinstance(action, int | np.integer) \
                or not 0 <= action < NUM_ACTIONS:  # True is not "move north"
            raise ValueError(f"{agent}: action {action!r} is outside the action space "
                             f"Discrete({NUM_ACTIONS}); see orgteams.envs.core.actions")
        return int(action)

    def _make_obs_space(self, obs_mode: str, view_radius: int) -> spaces.Space:
        if obs_mode == "array":
            return observation_space(view_radius)
        if obs_mode == "flat":
            self._flat_inverse = 1 / flat_scale(view_radius, self.task.units[1])
            return flat_space(view_radius, self.task.units[1])
        if obs_mode == "image":
            return image_space(view_radius, self.image_scale)
        # At least TEXT_SPACE_LENGTH; more where a large house or team can write more
        # (full observability of 83 rooms and 64 agents: 13,749 characters).
        return spaces.Text(self.text_length, charset=string.printable)

    def _indices(self) -> list[int]:
        agents = self.agents
        if agents == self.possible_agents:  # the usual case: everyone, in index order
            return self._all_indices
        return [self.agent_index[a] for a in agents]

    def _current_masks(self, before: HouseholdState | None = None, events: list = ()
                       ) -> list[np.ndarray] | None:
        """Each live agent's action mask (:mod:`orgteams.envs.core.masks`), or None when off;
        ``before`` and ``events``: the tick that led to the current world, if any."""
        if not (self.observations and self.with_action_masks):
            self._masks = None
        else:
            self._masks = self._mask_cache(self.world, self._indices(), before, events)
        return self._masks

    def episode_statistics(self) -> dict[str, Any]:
        """The episode's statistics so far (at its end: the whole episode's), in SB3's
        ``info["episode"]`` form: return ``r``, length ``l``, ``is_success``,
        ``units_done``, ``units_total``, ``invalid_actions``, ``collisions``. A new dict
        each call; ``rich_infos=True`` also puts it in the last infos of an episode."""
        world = self.world
        if world is None:
            raise RuntimeError("call reset() before episode_statistics()")
        return {"r": self._stats["r"], "l": world.tick, "is_success": world.success,
                "units_done": sum(world.progress), "units_total": sum(world.scene.goal_counts),
                "invalid_actions": self._stats["invalid_actions"],
                "collisions": self._stats["collisions"]}

    def _observations(self) -> dict[str, Any]:
        if not self.observations:
            return dict.fromkeys(self.agents)
        agents = self.agents
        obs = self._encode(agents, self._indices())
        if self.action_mask_in_obs:
            obs = [{"observation": o, "action_mask": m} for o, m in zip(obs, self._masks)]
        return dict(zip(agents, obs))

    def _encode(self, agents: list[str], indices: list[int]) -> list[Any]:
        """The observations of ``agents`` (at ``indices``) in this env's ``obs_mode``."""
        if self.obs_mode == "text":
            return [self.describe(a) for a in agents]
        obs = self._observer.observe_many(self.world, indices)
        if self.obs_mode != "array" and obs:
            images, hands, goals = batch(obs)
            if self.obs_mode == "flat":
                return list(encode_flat(images, hands, goals, self._flat_inverse))
            return list(encode_image(images, goals, self.image_scale))
        return obs


def _fresh_stats() -> dict[str, float]:
    """Running totals of an episode, for :meth:`HouseholdEnv.episode_statistics`."""
    return {"r": 0.0, "invalid_actions": 0, "collisions": 0}


def _with_units(task: TaskSpec, units: int | tuple[int, int]) -> TaskSpec:
    """The task with another goal size (``units=``: one number or ``(min, max)``)."""
    pair = (units, units) if isinstance(units, int | np.integer) else tuple(units)
    if len(pair) != 2 or not all(isinstance(u, int | np.integer) for u in pair) \
            or not 1 <= pair[0] <= pair[1]:
        raise ValueError(f"units must be a positive integer or (min, max) with "
                         f"1 <= min <= max, got {units!r}")
    most = MAX_GOAL_PREDICATES * task.max_per_predicate
    if pair[1] > most:
        raise ValueError(f"units={units!r}: task {task.name!r} allows at most {most} units "
                         f"({MAX_GOAL_PREDICATES} goal rows x max_per_predicate "
                         f"{task.max_per_predicate})")
    return dataclasses.replace(task, units=(int(pair[0]), int(pair[1])))
