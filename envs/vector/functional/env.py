"""``household_v0.jax_env``: the household as a pure JAX env, in JaxMARL's shape.

``reset(key) -> (obs, state)`` and ``step(key, state, actions) -> (obs, state, rewards,
dones, infos)`` are pure functions of arrays: ``jit``, ``vmap`` and ``lax.scan`` them
as any JaxMARL ``MultiAgentEnv`` (``agents``, ``observation_space(agent)``,
``action_space(agent)``, ``get_avail_actions(state)``, dicts keyed by agent with
``dones["__all__"]``), so JaxMARL's wrappers (``LogWrapper``) and PureJaxRL-style
training run on it unchanged. The env does not import JaxMARL.

Episodes. Drawing a starting world (goal, objects, placements, agent starts) is the
scalar :func:`~orgteams.envs.core.start.make_episode`, a loop of data-dependent draws;
rather than restate it in JAX with another random stream, the env draws ``episodes``
of them once, at construction, with the scalar code itself: episode ``j`` is exactly
the one of ``household_v0.parallel_env(...).reset(seed=seed + j)``. ``reset(key)``
picks one of them uniformly (``state.episode`` says which). So every episode played
here is a scalar env's episode, and the rest (dynamics, masks, observations, rewards)
is the scalar rules restated over arrays (:mod:`.core`, shared with
``vector_env(backend="jax")``) and checked tick by tick against the scalar env
(:func:`orgteams.envs.vector.check.compare_jax_env_with_scalar`). A held-out
evaluation uses another ``seed`` (an env whose episodes are ``seed``, ``seed + 1``,
...; disjoint ranges share none).

Autoreset as JaxMARL's ``MultiAgentEnv.step``: when ``dones["__all__"]``, the
returned state and observations are a fresh episode's (drawn with the step's key);
rewards, dones and infos are the finished tick's. The finished episode's last
observation is not returned (PureJaxRL's convention; it bootstraps nothing).

Outputs per household (``vmap`` adds the batch axes):

* observations: ``obs_mode="flat"`` ``(D,)`` float32 in [0, 1] (``obs_dtype=np.uint8``:
  the raw plane values, a quarter of the bytes), ``"image"`` ``(planes, S, S)`` uint8;
  the same arrays as the scalar env's (``rl_obs``);
* rewards: the team reward as float32, ``np.float32`` of the scalar env's float64
  reward (looked up in a table the scalar formula filled, so no rounding of our own);
* dones: the scalar env's ``terminated or truncated`` per agent, and ``__all__``;
* infos, each ``(num_agents,)`` (JaxMARL's baselines reshape every leaf to the
  actors' batch): ``invalid_action``, ``collision`` (this tick's events, per agent),
  ``is_success``, ``truncated``, ``tick``, and the episode's running statistics
  ``units_done``, ``units_total``, ``invalid_actions``, ``collisions`` (at the tick an
  episode ends they are the scalar env's ``info["episode"]``; the return ``r`` is the
  sum of rewards, which ``LogWrapper`` keeps);
* ``get_avail_actions(state)``: the int8 ``(53,)`` action mask of each agent.

Actions are ids of ``Discrete(53)``, a dict by agent (JaxMARL) or one ``(num_agents,)``
array. Inside ``jit`` nothing can raise: ids outside ``[0, 53)`` are clipped into it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from gymnasium.utils import seeding

from orgteams.errors import MissingExtraError

try:
    import jax
    import jax.numpy as jnp
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError('household_v0.jax_env needs the "jax" extra: pip install '
                            '"orgteams[jax]"') from exc

from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.core.rewards import SUBGOAL_BONUS
from orgteams.envs.core.start import make_episode
from orgteams.envs.household import HouseholdEnv
from orgteams.envs.observe.rl_obs import image_space
from orgteams.envs.vector.batch import BatchState, max_objects
from orgteams.envs.vector.flat_buffer import flat_dtype
from orgteams.envs.vector.functional.core import JaxCore
from orgteams.envs.vector.tables import layout_tables

OBS_MODES = ("flat", "image")
DEFAULT_EPISODES = 10_000
"""Episodes drawn at construction (about 1 s of the scalar ``make_episode``)."""


class Discrete:
    """A JAX space of ids ``0 .. n-1`` (the interface of JaxMARL's / gymnax's)."""

    def __init__(self, n: int, dtype: Any = jnp.int32):
        self.n, self.shape, self.dtype = int(n), (), dtype

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, self.shape, 0, self.n).astype(self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        return jnp.logical_and(x >= 0, x < self.n)

    def __repr__(self) -> str:
        return f"Discrete({self.n})"


class Box:
    """A JAX space of arrays within ``[low, high]`` (the interface of JaxMARL's)."""

    def __init__(self, low: Any, high: Any, shape: tuple[int, ...], dtype: Any):
        self.low, self.high, self.shape, self.dtype = low, high, tuple(shape), dtype

    def sample(self, key: jax.Array) -> jax.Array:
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(key, self.shape, self.low,
                                      jnp.asarray(self.high) + 1).astype(self.dtype)
        return jax.random.uniform(key, self.shape, minval=self.low,
                                  maxval=self.high).astype(self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        return jnp.logical_and(jnp.all(x >= self.low), jnp.all(x <= self.high))

    def __repr__(self) -> str:
        return f"Box({self.shape}, {jnp.dtype(self.dtype).name})"


class State(NamedTuple):
    """One household (``vmap`` adds leading axes). Ids and counts int32, flags bool."""

    tick: jax.Array  # ()
    pos: jax.Array  # (A,) flat cells
    hands: jax.Array  # (A, HAND_CAPACITY + 1) object ids in pick order, -1 pads
    held: jax.Array  # (A,)
    contents: jax.Array  # (F, max_capacity + 1) object ids, -1 pads
    count: jax.Array  # (F,)
    container_open: jax.Array  # (F,) bool
    door_open: jax.Array  # (D,) bool
    progress: jax.Array  # (5,) satisfied units per goal row
    object_class: jax.Array  # (O,) catalog class per object id, -1 pads
    goal_class: jax.Array  # (5,)
    goal_target: jax.Array  # (5,)
    goal_count: jax.Array  # (5,)
    opened_paid: jax.Array  # (F,) bool: "subgoals" bonus paid for opening it
    picked_paid: jax.Array  # (O,) bool: "subgoals" bonus paid for picking it
    invalid_actions: jax.Array  # () this episode's invalid actions so far
    collisions: jax.Array  # ()
    episode: jax.Array  # () which of the drawn episodes this is


# The fields of State that BatchState has (the bank and functional.core use these names).
_WORLD = ("tick", "pos", "hands", "held", "contents", "count", "container_open",
          "door_open", "progress", "object_class", "goal_class", "goal_target", "goal_count")


class HouseholdJaxEnv:
    """The household for JAX: pure ``reset`` / ``step`` of one household (module doc)."""

    def __init__(self, layout: str = "apartment", task: str = "prepare_afternoon_tea",
                 num_agents: int = 3, obs_mode: str = "flat", view_radius: int = 7,
                 full_observability: bool = False, reward_shaping: bool | str = False,
                 max_ticks: int | None = None, units: int | tuple[int, int] | None = None,
                 image_scale: int | None = None, obs_dtype: Any = np.float32,
                 episodes: int = DEFAULT_EPISODES, seed: int = 0):
        """Arguments as ``household_v0.parallel_env`` (the scalar env validates them and
        defines the spaces), plus ``obs_dtype`` (``np.float32`` or ``np.uint8``, flat
        only: as ``vector_env``'s), ``episodes`` (how many starting worlds to draw) and
        ``seed`` (episode ``j`` is the scalar env's ``reset(seed=seed + j)``)."""
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES} for the JAX env, "
                             f"got {obs_mode!r}")
        dtype = flat_dtype(obs_dtype)
        if dtype == np.uint8 and obs_mode != "flat":
            raise ValueError(f"obs_dtype=np.uint8 is for obs_mode='flat', got {obs_mode!r}")
        if isinstance(episodes, bool) or not isinstance(episodes, int | np.integer) \
                or episodes < 1:
            raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        tpl = HouseholdEnv(layout=layout, task=task, num_agents=num_agents,
                           obs_mode=obs_mode, view_radius=view_radius,
                           full_observability=full_observability,
                           reward_shaping=reward_shaping, max_ticks=max_ticks, units=units,
                           image_scale=image_scale)
        self.layout, self.task = tpl.layout, tpl.task
        self.obs_mode, self.obs_dtype = obs_mode, dtype
        self.reward_shaping = tpl.reward_shaping
        self.num_agents = len(tpl.possible_agents)
        self.agents = list(tpl.possible_agents)
        self.seed, self.num_episodes = int(seed), int(episodes)
        # The episodes, drawn by the scalar code and packed as the batched core's rows.
        worlds = [make_episode(self.layout, self.task, self.num_agents,
                               seeding.np_random(self.seed + j)[0])
                  for j in range(self.num_episodes)]
        self.step_limit = int(max_ticks or worlds[0].scene.step_limit)  # 0/None: the task's
        tables = layout_tables(worlds[0].scene, view_radius, full_observability)
        bank = BatchState.empty(self.num_episodes, self.num_agents, tables,
                                max_objects(self.task))
        for j, world in enumerate(worlds):
            bank.pack(j, world)
        self._bank = {k: jnp.asarray(_narrow(getattr(bank, k))) for k in _WORLD}
        inverse = getattr(tpl, "_flat_inverse", None)
        self._core = JaxCore(tables, inverse, tpl.image_scale)
        self._furniture = len(tables.capacity)
        self._ftype = jnp.asarray(tables.furniture_type.astype(np.int32))
        self._rewards = jnp.asarray(_reward_table(self.reward_shaping, self.task.units[1],
                                                  self.num_agents))
        if obs_mode == "image":
            space = image_space(view_radius, tpl.image_scale)
            obs_space = Box(0, 255, space.shape, jnp.uint8)
        elif dtype == np.uint8:
            scale = np.rint(1 / inverse).astype(np.uint8)
            obs_space = Box(jnp.zeros_like(scale), jnp.asarray(scale), scale.shape, jnp.uint8)
        else:
            obs_space = Box(0.0, 1.0, inverse.shape, jnp.float32)
        self.observation_spaces = {a: obs_space for a in self.agents}
        self.action_spaces = {a: Discrete(NUM_ACTIONS) for a in self.agents}

    # ---- JaxMARL's MultiAgentEnv interface ----
    @property
    def name(self) -> str:
        return "household_v0"

    @property
    def agent_classes(self) -> dict[str, list[str]]:
        return {"agent": list(self.agents)}

    def observation_space(self, agent: str) -> Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Discrete:
        return self.action_spaces[agent]

    @functools.partial(jax.jit, static_argnums=0)
    def reset(self, key: jax.Array) -> tuple[dict[str, jax.Array], State]:
        """A new episode (one of the drawn ones, uniformly) and its observations."""
        state = self._draw(key)
        return self.get_obs(state), state

    @functools.partial(jax.jit, static_argnums=0)
    def step(self, key: jax.Array, state: State, actions: Mapping[str, jax.Array] | jax.Array,
             reset_state: State | None = None):
        """One tick; when the episode ends, the state and observations are a new
        episode's (``reset_state`` if given, else drawn with ``key``): JaxMARL's
        autoreset. Returns ``(obs, state, rewards, dones, infos)``."""
        after, rewards, dones, infos = self._transition(state, actions)
        fresh = self._draw(jax.random.split(key)[1]) if reset_state is None else reset_state
        state = jax.tree.map(lambda new, old: jax.lax.select(dones["__all__"], new, old),
                             fresh, after)
        # The observations of the state kept (one encoding, not one per branch).
        return self.get_obs(state), state, rewards, dones, infos

    def step_env(self, key: jax.Array, state: State,
                 actions: Mapping[str, jax.Array] | jax.Array):
        """One tick without autoreset (JaxMARL's ``step_env``)."""
        after, rewards, dones, infos = self._transition(state, actions)
        return self.get_obs(after), after, rewards, dones, infos

    def get_obs(self, state: State) -> dict[str, jax.Array]:
        """Each agent's observation of ``state``."""
        # Each agent's encoded on its own: one array per agent as JaxMARL hands them out,
        # not slices of one (N, A, D) block (core._planes_one).
        st = self._world(state)
        return {a: self._encode(st, i)[0] for i, a in enumerate(self.agents)}

    def get_avail_actions(self, state: State) -> dict[str, jax.Array]:
        """Each agent's int8 ``(53,)`` action mask (1: the action takes effect)."""
        masks = self.action_masks(state)
        return {a: masks[i] for i, a in enumerate(self.agents)}

    # ---- the same, as (num_agents, ...) arrays ----
    def observations(self, state: State) -> jax.Array:
        """``(num_agents, ...)`` observations of ``state``."""
        return self._encode(self._world(state))

    def _encode(self, st: dict[str, jax.Array], agent: int | None = None) -> jax.Array:
        core = self._core
        if self.obs_mode == "image":
            return core._image_one(st, agent)
        if self.obs_dtype == np.uint8:  # the raw plane values: no scaling
            return core._raw_flat_one(st, agent)
        return core._flat_one(st, agent)

    def action_masks(self, state: State) -> jax.Array:
        """``(num_agents, 53)`` int8 action masks of ``state``."""
        return self._core._masks_one(self._world(state))

    # ---- internals ----
    def _draw(self, key: jax.Array) -> State:
        j = jax.random.randint(key, (), 0, self.num_episodes)
        world = {k: v[j].astype(jnp.bool_ if v.dtype == jnp.bool_ else jnp.int32)
                 for k, v in self._bank.items()}
        zero = jnp.zeros((), jnp.int32)
        return State(**world, opened_paid=jnp.zeros(self._furniture, bool),
                     picked_paid=jnp.zeros(world["object_class"].shape, bool),
                     invalid_actions=zero, collisions=zero, episode=j.astype(jnp.int32))

    @staticmethod
    def _world(state: State) -> dict[str, jax.Array]:
        return {k: getattr(state, k) for k in _WORLD}

    def _actions(self, actions: Mapping[str, jax.Array] | jax.Array) -> jax.Array:
        if isinstance(actions, Mapping):
            actions = jnp.stack([jnp.asarray(actions[a]) for a in self.agents])
        return jnp.clip(jnp.asarray(actions).astype(jnp.int32), 0, NUM_ACTIONS - 1)

    def _transition(self, state: State, actions):
        """The tick without autoreset: the new state, rewards, dones and infos."""
        acts = self._actions(actions)
        world, (invalid, collision, opened, picked, picked_from, _) = \
            self._core._step_one(self._world(state), acts)
        done = (world["progress"] == state.goal_count).all()
        truncated = (world["tick"] >= self.step_limit) & ~done
        found, opened_paid, picked_paid = self._subgoals(state, opened, picked, picked_from)
        units = state.goal_count.sum()
        delta = world["progress"].sum() - state.progress.sum()
        reward = self._rewards[units, done.astype(jnp.int32), delta + self.num_agents, found]
        after = state._replace(
            **world, opened_paid=opened_paid, picked_paid=picked_paid,
            invalid_actions=state.invalid_actions + invalid.sum(dtype=jnp.int32),
            collisions=state.collisions + collision.sum(dtype=jnp.int32))
        a = self.num_agents
        ended = done | truncated
        dones = {name: ended for name in self.agents}
        dones["__all__"] = ended
        infos = {"invalid_action": invalid, "collision": collision,
                 "is_success": jnp.full(a, done), "truncated": jnp.full(a, truncated),
                 "tick": jnp.full(a, after.tick),
                 "units_done": jnp.full(a, after.progress.sum()),
                 "units_total": jnp.full(a, units),
                 "invalid_actions": jnp.full(a, after.invalid_actions),
                 "collisions": jnp.full(a, after.collisions)}
        return after, {name: reward for name in self.agents}, dones, infos

    def _subgoals(self, state: State, opened: jax.Array, picked: jax.Array,
                  picked_from: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """How many right containers and goal objects were newly found this tick, and
        the updated "paid" flags (``rewards.BatchReward._subgoals`` for one household;
        ``state`` is the state before the tick)."""
        if self.reward_shaping != "subgoals":
            return jnp.zeros((), jnp.int32), state.opened_paid, state.picked_paid
        missing = state.progress < state.goal_count  # (G,); unused rows have count 0
        f = jnp.maximum(opened, 0)
        is_target = ((self._ftype[f][:, None] == state.goal_target[None, :])
                     & missing[None, :]).any(axis=1)
        inside = state.contents[f]  # (A, cap + 1), -1 pads
        cls = jnp.where(inside >= 0, state.object_class[jnp.maximum(inside, 0)], -2)
        wanted = jnp.where(missing, state.goal_class, -3)
        holds = (cls[:, :, None] == wanted[None, None, :]).any(axis=(1, 2))
        hit_open = (opened >= 0) & ~state.opened_paid[f] & (is_target | holds)
        opened_paid = state.opened_paid.at[jnp.where(hit_open, opened, self._furniture)].set(
            True, mode="drop")
        o = jnp.maximum(picked, 0)
        pcls = state.object_class[o]
        row = (missing[None, :] & (state.goal_class[None, :] == pcls[:, None])
               & (state.goal_target[None, :] != self._ftype[jnp.maximum(picked_from, 0)][:, None]))
        hit_pick = (picked >= 0) & ~state.picked_paid[o] & row.any(axis=1)
        picked_paid = state.picked_paid.at[
            jnp.where(hit_pick, picked, state.picked_paid.shape[0])].set(True, mode="drop")
        found = hit_open.sum(dtype=jnp.int32) + hit_pick.sum(dtype=jnp.int32)
        return found, opened_paid, picked_paid


def _reward_table(level: str, max_units: int, agents: int) -> np.ndarray:
    """``[units, done, delta + agents, found]`` -> the scalar env's reward as float32.

    Filled by the scalar arithmetic (:class:`~orgteams.envs.core.rewards.TeamReward`, in
    float64, in its order) for every case a tick can reach: each agent moves at most
    one object (``|delta| <= agents``) and finds at most one subgoal (``found <= agents``).
    """
    table = np.zeros((max_units + 1, 2, 2 * agents + 1, agents + 1), np.float32)
    for units in range(1, max_units + 1):
        for done in (0, 1):
            for delta in range(-agents, agents + 1):
                for found in range(agents + 1):
                    reward = 1.0 if done else 0.0
                    if level != "none":
                        reward += delta / units
                        if level == "subgoals" and found:
                            reward += found * SUBGOAL_BONUS / units
                    table[units, done, delta + agents, found] = reward
    return table


def _narrow(a: np.ndarray) -> np.ndarray:
    """``a`` in the smallest of int8 / int16 / int32 that holds its values (the drawn
    episodes stay small in memory; ``_draw`` widens one row to int32)."""
    if a.dtype == bool:
        return a
    lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= lo and hi <= info.max:
            return a.astype(dtype)
    raise ValueError(f"values {lo}..{hi} do not fit int32")


__all__ = ["HouseholdJaxEnv", "State", "Discrete", "Box", "OBS_MODES", "DEFAULT_EPISODES"]
