"""``VectorHouseholdEnv``: ``N`` households of one layout stepped as arrays.

Every array is shaped ``(num_envs, num_agents, ...)``. Episodes are drawn per
household by the scalar :func:`~orgteams.envs.core.start.make_episode` from a generator
seeded as the scalar env seeds its own (``reset(seed=s)``: household ``i`` gets seed
``s + i``), so household ``i`` plays exactly the episodes of
``household_v0.parallel_env(...).reset(seed=s + i)`` followed by plain ``reset()``s.
Stepping is vectorized (:mod:`orgteams.envs.vector.dynamics`).

Autoreset follows Gymnasium's ``AutoresetMode.SAME_STEP`` by default: a household
that terminates or truncates is reset inside the same ``step``; the returned
observation and mask are the new episode's first, and ``infos["final_obs"]`` /
``infos["final_info"]`` (with the masks ``infos["_final_obs"]`` /
``infos["_final_info"]``) hold the finished episode's last observation and info:
``final_obs`` is an object array of ``(num_agents, ...)`` observations (None for
households that did not finish), ``final_info`` a dict of ``(num_envs, ...)`` arrays
(``episode``: return ``r``, length ``l``, ``is_success``, ``units_done``,
``units_total``, ``invalid_actions``, ``collisions``; ``action_mask``; ``tick``).

``autoreset_mode=AutoresetMode.NEXT_STEP`` (Gymnasium's default): the step that ends an
episode returns its last observation, with ``is_success`` and ``tick`` of that tick,
and its statistics in ``infos["episode_stats"]`` (the keys of ``episode`` above; mask
``infos["_episode_stats"]``: a top-level ``episode`` is the key of Gymnasium's
``RecordEpisodeStatistics``); the next ``step`` ignores that household's actions and
returns its new episode's first observation, with reward 0 and neither flag set.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode

from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.core.layout import Layout
from orgteams.envs.core.start import make_episode
from orgteams.envs.core.state import HouseholdState, Scene
from orgteams.envs.core.tasks import TaskSpec
from orgteams.envs.household import HouseholdEnv
from orgteams.envs.vector.batch import BatchState, max_objects
from orgteams.envs.vector.dynamics import check_actions, step_batch
from orgteams.envs.vector.flat_buffer import FlatBuffer, flat_dtype, to_uint8
from orgteams.envs.vector.masks import batch_masks
from orgteams.envs.vector.observe import batch_observations
from orgteams.envs.vector.outputs import OutputPool
from orgteams.envs.vector.rewards import BatchReward
from orgteams.envs.vector.tables import LayoutTables, layout_tables
from orgteams.errors import UserError

VECTOR_OBS_MODES = ("flat", "image")
BACKENDS = ("numpy", "jax")
AUTORESET_MODES = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP)


HOUSEHOLD_STATE_BYTES = 16 * 1024
"""Memory of one household besides its observations (state arrays, scene, generator)."""
OBSERVATION_COPIES = 3
"""Observation-sized buffers per household in :func:`estimated_bytes`: measured peak
memory was 2.5 to 3.1 times the observations' bytes plus under 16 KiB (flat and image
observations, 1 to 8 agents, studio to house)."""


def estimated_bytes(num_envs: int, num_agents: int, observation_space: spaces.Box,
                    observations: bool = True) -> int:
    """About how much memory ``num_envs`` households take once stepping (an upper
    estimate: :data:`OBSERVATION_COPIES` x observations + :data:`HOUSEHOLD_STATE_BYTES`
    each)."""
    obs = num_agents * observation_space.dtype.itemsize * int(np.prod(
        observation_space.shape)) if observations else 0
    return num_envs * (OBSERVATION_COPIES * obs + HOUSEHOLD_STATE_BYTES)


def memory_available() -> int | None:
    """Bytes of memory available now (Linux's ``MemAvailable``), else the machine's
    physical memory, else None (unknown)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(num_envs: int, num_agents: int, observation_space: spaces.Box,
                 observations: bool = True) -> None:
    """Refuse, before allocating, households that would not fit in memory.

    Raises:
        UserError: ``num_envs=20000 needs about 6.2 GiB (...)``, one line, when
            :func:`estimated_bytes` exceeds :func:`memory_available` (20,000 households
            of 3 agents took 4.3 GB and swapped before this check).
    """
    need, have = estimated_bytes(num_envs, num_agents, observation_space,
                                 observations), memory_available()
    if have is not None and need > have:
        raise UserError(
            f"num_envs={num_envs} needs about {need / 2**30:.1f} GiB "
            f"({need / num_envs / 1024:.0f} KiB per household of {num_agents} agents, "
            f"mostly observations), more than the {have / 2**30:.1f} GiB of memory "
            f"available; use fewer households{' or observations=False' if observations else ''}")


class VectorHouseholdEnv:
    """``num_envs`` households of one layout, task and team size, stepped together."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}  # per instance: __init__

    def __init__(self, num_envs: int, layout: str | Layout = "apartment",
                 task: str | TaskSpec = "prepare_afternoon_tea", num_agents: int = 3,
                 obs_mode: str = "flat", seed: int | Sequence[int] | None = None,
                 view_radius: int = 7, full_observability: bool = False,
                 reward_shaping: bool | str = False, max_ticks: int | None = None,
                 units: int | tuple[int, int] | None = None, image_scale: int | None = None,
                 observations: bool = True, copy: bool = True, backend: str = "numpy",
                 obs_dtype: type | np.dtype = np.float32,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
                 max_cycles: int | None = None):
        """Arguments as :class:`HouseholdEnv`; ``seed`` as :meth:`reset`'s.
        ``observations=False``: ``reset`` and ``step`` return None for the observations
        (the core's rate without encoding them; masks, rewards and infos as usual).
        ``copy=False`` (as Gymnasium's vector envs): flat observations are a read-only
        view of one array that every ``step`` updates in place; copy what you keep
        (saves copying ``num_envs x num_agents x D`` entries per step; the numpy core
        keeps flat observations in that array and rewrites only what changed,
        :mod:`.flat_buffer`). ``copy=True``: each call returns an array of the
        caller's own, never written again while the caller refers to it (or to a view
        of it); the env copies its buffer into arrays the caller has dropped
        (:mod:`.outputs`) instead of allocating fresh pages every step. Flat
        observations (numpy) come read-only and a recycled array gets only what
        changed since it was filled; one the caller made writeable
        (``obs.flags.writeable = True``) is copied whole when recycled.
        ``obs_dtype=np.uint8`` (``obs_mode="flat"``, numpy): the flat entries as raw
        plane values (counts as counts, not divided by their most), a quarter of the
        bytes; the space is ``Box(0, flat_scale, uint8)`` and each entry is
        ``round(x * flat_scale)`` of the float32 entry ``x``.
        ``backend="jax"`` (the ``jax`` extra; ``flat`` or ``image`` observations in
        float32 / uint8 as the numpy core's defaults): the tick, masks and
        observations run as one ``jit``-compiled ``vmap`` of a household's step
        (:mod:`.functional.core`); episodes and rewards stay on the numpy side.
        ``autoreset_mode``: ``SAME_STEP`` (the default) or ``NEXT_STEP`` (module
        docstring), an :class:`~gymnasium.vector.AutoresetMode` or its value
        (``"SameStep"``, ``"NextStep"``); ``max_cycles``: PettingZoo's name for
        ``max_ticks``."""
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) \
                or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            mode = None
        if mode not in AUTORESET_MODES:
            raise ValueError(f"autoreset_mode must be one of "
                             f"{[m.value for m in AUTORESET_MODES]}, got {autoreset_mode!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if obs_mode not in VECTOR_OBS_MODES:
            raise ValueError(f"obs_mode must be one of {VECTOR_OBS_MODES} for the vector env, "
                             f"got {obs_mode!r}")
        dtype = flat_dtype(obs_dtype)
        if dtype == np.uint8 and (obs_mode != "flat" or backend != "numpy"):
            raise ValueError("obs_dtype=np.uint8 is for obs_mode='flat' with the numpy "
                             f"backend, got obs_mode={obs_mode!r}, backend={backend!r}")
        if backend == "jax":  # fail here, not at the first reset, when JAX is missing
            import orgteams.envs.vector.functional.core  # noqa: F401  (MissingExtraError)
        # The scalar env validates every other argument and defines the spaces; it is
        # also the template of the episodes (layout, task, units, step limit).
        self._template = HouseholdEnv(
            layout=layout, task=task, num_agents=num_agents, obs_mode=obs_mode,
            view_radius=view_radius, full_observability=full_observability,
            reward_shaping=reward_shaping, max_ticks=max_ticks, units=units,
            image_scale=image_scale, max_cycles=max_cycles)
        tpl = self._template
        max_ticks = tpl.max_ticks
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.num_envs, self.num_agents = int(num_envs), len(tpl.possible_agents)
        self.layout, self.task, self.obs_mode = tpl.layout, tpl.task, obs_mode
        self.max_ticks = max_ticks
        self.possible_agents = list(tpl.possible_agents)
        self.single_observation_space = tpl.observation_space(tpl.possible_agents[0])
        self._inverse = getattr(tpl, "_flat_inverse", None)
        self.obs_dtype = dtype
        if dtype == np.uint8:  # raw plane values: each entry's bound is its scale
            self._scale = np.rint(1 / self._inverse).astype(np.uint8)
            self.single_observation_space = spaces.Box(
                np.zeros_like(self._scale), self._scale, dtype=np.uint8)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        shape = (self.num_envs, self.num_agents)
        self.observation_shape = shape + self.single_observation_space.shape
        self.action_space = spaces.MultiDiscrete(np.full(shape, NUM_ACTIONS))
        check_memory(self.num_envs, self.num_agents, self.single_observation_space,
                     bool(observations))
        self._image_scale = tpl.image_scale
        self._view_radius, self._full = view_radius, full_observability
        self._tables: LayoutTables | None = None
        self._batch: BatchState | None = None
        self._reward: BatchReward | None = None
        self._rngs: list[np.random.Generator] = []
        self.scenes: list[Scene] = []
        self._masks: np.ndarray | None = None
        self._mask_cache: np.ndarray | None = None  # our own copy of the last masks
        self._seed = seed
        self.observations = bool(observations)
        self.backend = backend
        self._jax = None  # the compiled core of backend="jax", built with the tables
        self.copy = bool(copy)
        self._flat: FlatBuffer | None = None  # the numpy core's flat observations
        self._outputs = OutputPool()  # copy=True: the copies of _flat handed out
        self._returns = np.zeros(self.num_envs)
        self._invalid = np.zeros(self.num_envs, np.int64)
        self._collisions = np.zeros(self.num_envs, np.int64)
        # NEXT_STEP: the households whose episode ended at the last step (reset at this one)
        self._pending = np.zeros(self.num_envs, bool)

    # ---- the vector API ----
    def reset(self, seed: int | Sequence[int] | None = None, options: dict | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new episode in every household. ``seed``: an int (household ``i``
        gets ``seed + i``) or one seed per household; None continues each household's
        generator (the constructor's ``seed`` on the first reset).
        ``options={"reset_mask": m}`` (Gymnasium's partial reset): only the households
        where the ``(num_envs,)`` bool array ``m`` is True start anew (a given ``seed``
        seeds only those), the others go on; returns every household's observation."""
        options = dict(options or {})
        reset_mask = options.pop("reset_mask", None)
        if options:  # nothing silently ignored
            raise ValueError(f"unknown reset options {sorted(options)}; the vector env "
                             "takes 'reset_mask'")
        if reset_mask is not None:
            if self._batch is None:
                raise RuntimeError("call reset() without a reset_mask first (every "
                                   "household needs a first episode)")
            return self._reset_masked(reset_mask, seed)
        if seed is None and not self._rngs:
            seed = self._seed
        if seed is not None or not self._rngs:
            self._rngs = [seeding.np_random(s)[0] for s in self._seeds(seed)]
        states = [make_episode(self.layout, self.task, self.num_agents, rng)
                  for rng in self._rngs]
        if self._tables is None:
            self._tables = layout_tables(states[0].scene, self._view_radius, self._full)
            self._batch = BatchState.empty(self.num_envs, self.num_agents, self._tables,
                                           max_objects(self.task))
            if self.backend == "jax":
                from orgteams.envs.vector.functional.core import JaxCore

                self._jax = JaxCore(self._tables, self._inverse, self._image_scale)
            self._reward = BatchReward(self._template.reward_shaping, self.num_envs,
                                       len(self._tables.capacity),
                                       self._batch.object_class.shape[1])
        self.scenes = [s.scene for s in states]
        for i, state in enumerate(states):
            self._batch.pack(i, state)
        everyone = np.arange(self.num_envs)
        self._reward.reset(everyone)
        self._returns[:] = 0.0
        self._invalid[:] = 0
        self._collisions[:] = 0
        self._pending[:] = False
        obs = self._observe(self._batch)
        self._masks = self._batch_masks(self._batch)
        self._remember()
        return obs, {"action_mask": self._masks, "tick": self._batch.tick.copy(),
                     "is_success": np.zeros(self.num_envs, bool)}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                  np.ndarray, dict[str, Any]]:
        """One tick of every household; ``actions``: ``(num_envs, num_agents)`` ids.

        Returns observations ``(N, A, ...)``, rewards ``(N, A)`` float32 (the team's),
        terminated and truncated ``(N, A)`` bool, and infos: ``action_mask``
        ``(N, A, 53)`` int8, ``invalid_action`` and ``collision`` ``(N, A)`` bool (this
        tick's events), ``tick`` and ``is_success`` ``(N,)``; when a household finished,
        ``final_obs``, ``final_info`` and their masks (``SAME_STEP``) or
        ``episode_stats`` (``NEXT_STEP``; module docstring).
        """
        if self._batch is None:
            raise RuntimeError("call reset() before step()")
        t, s = self._tables, self._batch
        acts = check_actions(actions, (self.num_envs, self.num_agents))
        before_progress = s.progress.copy()
        before_contents = s.contents.copy() if self._reward.level == "subgoals" else None
        events = step_batch(t, s, acts) if self._jax is None else self._jax.step(s, acts)
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        # NEXT_STEP: households that ended at the last step start anew now; the tick they
        # just played is thrown away (their actions are ignored, as Gymnasium's).
        pending = None if same_step or not self._pending.any() else self._pending.copy()
        done = (s.progress == s.goal_count).all(axis=1)
        limit = self.max_ticks or s.step_limit  # as the scalar env: 0 or None -> the task's
        truncated = (s.tick >= limit) & ~done
        reward = self._reward(t, before_progress, before_contents, s, events, done)
        invalid, collision = events.invalid, events.collision
        if pending is not None:
            done &= ~pending
            truncated &= ~pending
            reward[pending] = 0.0
            invalid, collision = invalid & ~pending[:, None], collision & ~pending[:, None]
        self._returns += reward
        self._invalid += invalid.sum(axis=1)
        self._collisions += collision.sum(axis=1)
        buffered = self._buffered()
        obs = None if buffered else self._observe(s)
        # numpy: rebuild only the households where some action took effect this tick
        changed = events.changed if self._jax is None else None
        masks = self._batch_masks(s, changed)
        infos: dict[str, Any] = {"invalid_action": invalid, "collision": collision}
        ended = done | truncated
        finished = np.flatnonzero(ended)
        if same_step:
            resets = finished
            if len(finished):
                last = self._last_observations(finished, changed) if buffered else \
                    None if obs is None else obs[finished]
                infos.update(self._final(finished, last, masks, done))
        else:
            resets = np.flatnonzero(pending) if pending is not None else finished[:0]
            if len(finished):
                infos["episode_stats"] = self._statistics(ended, done)
                infos["_episode_stats"] = ended.copy()
            self._pending = ended
        if len(resets):
            self._reset_some(resets, obs, masks)
        if buffered:  # after the resets: their first observations are in it
            tail = None
            if changed is not None:
                changed[resets] = True
                tail = events.objects_moved.copy()
                tail[resets] = True
            obs = self._observe(s, changed, tail)
        self._masks = masks
        self._remember()
        # SAME_STEP: a household that succeeded was reset in this step: its success is
        # in final_info, and these entries describe the new episodes (as the reset's
        # info). NEXT_STEP: they describe the tick just played.
        infos.update({"action_mask": masks, "tick": s.tick.copy(),
                      "is_success": np.zeros(self.num_envs, bool) if same_step else done})
        shape = (self.num_envs, self.num_agents)
        return (obs, np.broadcast_to(reward.astype(np.float32)[:, None], shape).copy(),
                np.broadcast_to(done[:, None], shape).copy(),
                np.broadcast_to(truncated[:, None], shape).copy(), infos)

    @functools.cached_property
    def observation_space(self) -> spaces.Box:
        """The batch's space, built on first use: its bounds are two arrays as large as
        a batch of observations (200 MB at 1024 households of 3)."""
        box = self.single_observation_space
        return spaces.Box(np.broadcast_to(box.low, self.observation_shape),
                          np.broadcast_to(box.high, self.observation_shape), dtype=box.dtype)

    def action_masks(self) -> np.ndarray:
        """The current ``(num_envs, num_agents, 53)`` int8 masks (sb3-contrib's hook)."""
        if self._masks is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._masks

    def state(self, i: int) -> HouseholdState:
        """Household ``i``'s current world as a scalar :class:`HouseholdState`."""
        if self._batch is None:
            raise RuntimeError("call reset() before state()")
        return self._batch.unpack(i, self.scenes[i])

    def close(self) -> None:
        """Nothing to release (no windows, no processes); for the vector API."""

    # ---- internals ----
    def _seeds(self, seed: int | Sequence[int] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"seed must be an int or {self.num_envs} seeds (one per "
                             f"household), got {len(seeds)}")
        return seeds

    def _final(self, finished: np.ndarray, last: np.ndarray | None, masks: np.ndarray,
               done: np.ndarray) -> dict[str, Any]:
        """The finished households' last observations (``last``, in the order of
        ``finished``) and infos, Gymnasium's way."""
        s = self._batch
        flag = np.zeros(self.num_envs, bool)
        flag[finished] = True
        # As Gymnasium's SAME_STEP: an object array, each finished household's (A, ...)
        # observation, None elsewhere (no copy of the whole batch).
        final_obs = np.full(self.num_envs, None, dtype=object)
        for j, i in enumerate(finished.tolist()):
            final_obs[i] = None if last is None else last[j]
        final_masks = np.zeros_like(masks)
        final_masks[finished] = masks[finished]
        episode = self._statistics(flag, done)
        final_info = {"episode": episode, "_episode": flag.copy(), "action_mask": final_masks,
                      "_action_mask": flag.copy(), "is_success": flag & done,
                      "_is_success": flag.copy(), "tick": np.where(flag, s.tick, 0),
                      "_tick": flag.copy()}
        return {"final_obs": final_obs, "_final_obs": flag, "final_info": final_info,
                "_final_info": flag.copy()}

    def _statistics(self, flag: np.ndarray, done: np.ndarray) -> dict[str, np.ndarray]:
        """The episode statistics of the households where ``flag`` is set (zeros
        elsewhere), as the scalar env's ``episode_statistics()``."""
        s = self._batch
        return {"r": np.where(flag, self._returns, 0.0), "l": np.where(flag, s.tick, 0),
                "is_success": flag & done,
                "units_done": np.where(flag, s.progress.sum(axis=1), 0),
                "units_total": np.where(flag, s.goal_count.sum(axis=1), 0),
                "invalid_actions": np.where(flag, self._invalid, 0),
                "collisions": np.where(flag, self._collisions, 0)}

    def _reset_masked(self, reset_mask: Any, seed: int | Sequence[int] | None
                      ) -> tuple[np.ndarray, dict[str, Any]]:
        """``reset(options={"reset_mask": m})``: new episodes where ``m`` is set."""
        m = np.asarray(reset_mask)
        if m.dtype != np.bool_ or m.shape != (self.num_envs,):
            raise ValueError(f"options['reset_mask'] must be a bool array of shape "
                             f"({self.num_envs},), got {m.dtype} {m.shape}")
        idx = np.flatnonzero(m)
        if seed is not None:
            seeds = self._seeds(seed)
            for i in idx.tolist():
                self._rngs[i] = seeding.np_random(seeds[i])[0]
        self._pending[idx] = False
        obs = None if self._buffered() else self._observe(self._batch)
        masks = self._batch_masks(self._batch).copy()
        if len(idx):
            self._reset_some(idx, obs, masks)
        if obs is None:
            obs = self._observe(self._batch)  # the flat buffer, rewritten whole
        self._masks = masks
        self._remember()
        return obs, {"action_mask": masks, "tick": self._batch.tick.copy(),
                     "is_success": np.zeros(self.num_envs, bool)}

    def _reset_some(self, idx: np.ndarray, obs: np.ndarray | None, masks: np.ndarray) -> None:
        """Draw the next episode of households ``idx``; write their first observations
        and masks into ``obs`` and ``masks``."""
        s, t = self._batch, self._tables
        for i in idx.tolist():
            state = make_episode(self.layout, self.task, self.num_agents, self._rngs[i])
            self.scenes[i] = state.scene
            s.pack(i, state)
        self._reward.reset(idx)
        self._returns[idx] = 0.0
        self._invalid[idx] = 0
        self._collisions[idx] = 0
        if self._jax is not None:  # the full batch: a subset's size would compile anew
            if obs is not None:
                obs[...] = self._observe(s)
            masks[...] = self._batch_masks(s)
            return
        if obs is not None:
            obs[idx] = self._observe_part(s.take(idx))
        masks[idx] = batch_masks(t, s, idx)

    def _batch_masks(self, batch: BatchState, changed: np.ndarray | None = None
                     ) -> np.ndarray:
        """Masks of ``batch``; with ``changed`` (``(N,)`` bool, the whole batch) only
        those households' are rebuilt, the others' kept from the last step."""
        if self._jax is not None:
            return self._jax.masks(batch)
        if changed is None or self._mask_cache is None or changed.all():
            return batch_masks(self._tables, batch)
        masks = self._mask_cache.copy()
        idx = np.flatnonzero(changed)
        if len(idx):
            masks[idx] = batch_masks(self._tables, batch, idx)
        return masks

    def _remember(self) -> None:
        """After a step or reset (numpy): the masks the next step keeps for households
        that did not change (a copy: the caller may write into the masks it was given)."""
        if self._jax is None:
            self._mask_cache = self._masks.copy()

    def _buffered(self) -> bool:
        """Whether observations live in :class:`FlatBuffer` (numpy, flat; with
        ``copy=True`` each call returns a copy of it from :class:`OutputPool`)."""
        return self.observations and self._jax is None and self.obs_mode == "flat"

    def _observe(self, batch: BatchState, changed: np.ndarray | None = None,
                 tail: np.ndarray | None = None) -> np.ndarray | None:
        """Observations of the whole batch (``batch`` is ``self._batch``); ``changed``:
        the households whose state changed since the last step (None: all); ``tail``:
        those whose hands or goal rows may have (:meth:`FlatBuffer.write`)."""
        if not self.observations:
            return None
        if self._jax is not None:
            return self._jax.flat(batch) if self.obs_mode == "flat" else self._jax.image(batch)
        if self._buffered():
            if self._flat is None:
                self._flat = FlatBuffer(self._tables, self._inverse, self.num_envs,
                                        self.num_agents, self.obs_dtype)
            obs = self._flat.write(batch, changed, tail)
            if self.copy:  # an array of the caller's own, recycled once dropped
                return self._outputs.copy(obs, self._flat.version, self._flat.changes_since)
            view = obs.view()
            view.flags.writeable = False  # the next step updates only what changed
            return view
        return self._observe_part(batch)

    def _last_observations(self, finished: np.ndarray, changed: np.ndarray | None
                           ) -> np.ndarray:
        """Observations of this tick's state of the households ``finished`` (before their
        reset), with a :class:`FlatBuffer`: where no action took effect this tick (most
        episodes end at the step limit) the buffer's rows show this very state (the
        tick is not observed); the others are built anew."""
        if self._flat is None or changed is None:
            return self._observe_part(self._batch.take(finished))
        last = self._flat.array.reshape(self.observation_shape)[finished]
        redo = np.flatnonzero(changed[finished])
        if len(redo):
            last[redo] = self._observe_part(self._batch.take(finished[redo]))
        return last

    def _observe_part(self, batch: BatchState) -> np.ndarray:
        """Observations of any batch (a subset of households too), built anew."""
        obs = batch_observations(self._tables, batch, self.obs_mode, self._inverse,
                                 self._image_scale)
        return to_uint8(obs, self._scale) if self.obs_dtype == np.uint8 else obs


__all__ = ["VectorHouseholdEnv", "VECTOR_OBS_MODES", "BACKENDS", "AUTORESET_MODES"]
