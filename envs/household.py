"""The household environment behind the PettingZoo ``ParallelEnv`` API.

A thin shell over the pure dynamics in :mod:`orgteams.envs.dynamics`: it samples
episodes with its seeded generator, validates actions, builds observations and
rewards, and renders on request. See :mod:`orgteams.envs.household_v0` for the
documented constructors.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from orgteams.envs.actions import NUM_ACTIONS
from orgteams.envs.ansi import render_ansi
from orgteams.envs.dynamics import Event, transition
from orgteams.envs.episode import make_episode
from orgteams.envs.errors import UserError
from orgteams.envs.layout import Layout, load_layout
from orgteams.envs.observations import ArrayObserver, observation_space
from orgteams.envs.overlay import Overlay
from orgteams.envs.state import HouseholdState
from orgteams.envs.tasks import TaskSpec, load_task
from orgteams.envs.text import describe, describe_goal

OBS_MODES = ("array", "text")
RENDER_MODES = ("human", "rgb_array", "ansi")
TEXT_SPACE_LENGTH = 8192


class HouseholdEnv(ParallelEnv):
    """Gridworld household with room-limited partial observation (PettingZoo Parallel)."""

    metadata = {"name": "household_v0", "render_modes": list(RENDER_MODES),
                "render_fps": 10, "is_parallelizable": True}

    def __init__(self, layout: str | Layout = "apartment", task: str | TaskSpec =
                 "prepare_afternoon_tea", num_agents: int = 3, obs_mode: str = "array",
                 render_mode: str | None = None, view_radius: int = 7,
                 full_observability: bool = False, reward_shaping: bool = False,
                 max_ticks: int | None = None, render_fps: int | None = None,
                 render_options: dict | None = None):
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be None or one of {RENDER_MODES}, "
                             f"got {render_mode!r}")
        if not isinstance(num_agents, int | np.integer) or num_agents < 1:
            raise ValueError(f"num_agents must be a positive integer, got {num_agents!r}")
        if view_radius < 1:
            raise ValueError(f"view_radius must be >= 1, got {view_radius}")
        self.layout = layout if isinstance(layout, Layout) else load_layout(layout)
        self.task = task if isinstance(task, TaskSpec) else load_task(task)
        missing = sorted(self.task.targets() - {f.type for f in self.layout.furniture})
        if missing:
            raise UserError(f"task {self.task.name!r} needs {', '.join(missing)}, which "
                            f"layout {self.layout.name!r} does not have")
        self.obs_mode, self.render_mode = obs_mode, render_mode
        self.view_radius, self.full_observability = view_radius, full_observability
        self.reward_shaping, self.max_ticks = reward_shaping, max_ticks
        self.render_fps = render_fps or self.metadata["render_fps"]
        # Passed to PygameRenderer: show_fov, fov_agents, cell_size, font_path, title.
        self.render_options = dict(render_options or {})
        self.possible_agents = [f"agent_{i}" for i in range(int(num_agents))]
        self.agent_index = {a: i for i, a in enumerate(self.possible_agents)}
        self._all_indices = list(range(len(self.possible_agents)))
        self.agents: list[str] = []
        self.display_names: list[str] | None = None
        self.overlay = Overlay()
        if obs_mode == "array":
            space = observation_space(view_radius)
        else:
            space = spaces.Text(TEXT_SPACE_LENGTH, charset=string.printable)
        self._obs_spaces = {a: space for a in self.possible_agents}
        act = spaces.Discrete(NUM_ACTIONS)
        self._act_spaces = {a: act for a in self.possible_agents}
        self.np_random, self.np_random_seed = seeding.np_random(None)
        self.world: HouseholdState | None = None
        self._observer: ArrayObserver | None = None
        self._renderer = None
        # Private switch for wrappers that build their own observations (HighLevelEnv):
        # when False, reset() and step() return None for every agent instead of an
        # observation nobody reads. Users of this env never need to touch it.
        self._observe = True

    # ---- PettingZoo API ----
    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.np_random, self.np_random_seed = seeding.np_random(seed)
        self.world = make_episode(self.layout, self.task, len(self.possible_agents),
                                  self.np_random)
        self._observer = ArrayObserver(self.world.scene, self.view_radius,
                                       self.full_observability, previous=self._observer)
        self.agents = list(self.possible_agents)
        self.overlay.clear()
        infos = {a: {"events": [], "tick": 0} for a in self.agents}
        if self.render_mode == "human":
            self.render()
        return self._observations(), infos

    def step(self, actions: dict[str, Any]):
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
        rewards = 1.0 if done else 0.0
        if self.reward_shaping:
            rewards = self._rewards(before, events, done)
        agents = self.agents
        infos = {a: {"events": [], "tick": tick} for a in agents}
        if events:
            names = self.possible_agents
            for e in events:
                if e.agent < 0:  # a team event (a subgoal): everyone hears of it
                    for info in infos.values():
                        info["events"].append(e.to_dict())
                elif (info := infos.get(names[e.agent])) is not None:
                    info["events"].append(e.to_dict())
        obs = self._observations()
        terms = dict.fromkeys(agents, done)
        truncs = dict.fromkeys(agents, truncated)
        rew = dict.fromkeys(agents, rewards)
        if done or truncated:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return obs, rew, terms, truncs, infos

    def render(self):
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
            from orgteams.envs.rendering import PygameRenderer

            self._renderer = PygameRenderer(self.render_mode, fps=self.render_fps,
                                            **self.render_options)
        return self._renderer.render(self.world, self.overlay, self.display_names)

    def close(self):
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    # ---- extras for LLM agents, planners and tools ----
    def describe(self, agent: str) -> str:
        """What ``agent`` sees now, as text (stable object ids such as ``cup_2``)."""
        return describe(self.world, self.agent_index[agent], self.display_names,
                        self.full_observability)

    def describe_goal(self) -> str:
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
                             f"Discrete({NUM_ACTIONS}); see orgteams.envs.actions")
        return int(action)

    def _rewards(self, before: HouseholdState, events: list[Event], done: bool) -> float:
        reward = 1.0 if done else 0.0
        if self.reward_shaping:
            units = sum(p.count for p in self.world.scene.goal)
            reward += (sum(self.world.progress) - sum(before.progress)) / units
        return reward

    def _observations(self) -> dict[str, Any]:
        if not self._observe:
            return dict.fromkeys(self.agents)
        if self.obs_mode == "text":
            return {a: self.describe(a) for a in self.agents}
        agents = self.agents
        if agents == self.possible_agents:  # the usual case: everyone, in index order
            indices = self._all_indices
        else:
            indices = [self.agent_index[a] for a in agents]
        return dict(zip(agents, self._observer.observe_many(self.world, indices)))
