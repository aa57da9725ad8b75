"""household_v0: a gridworld household for teams of agents (PettingZoo).

Description
    A house of named rooms (kitchen, living room, bedroom, bathroom, and more)
    joined by doors. Furniture is either a surface (kitchen table, coffee table,
    sofa...) or a container that opens and closes (fridge, dishwasher, cabinets...).
    Small objects (cupcake, plate, wine glass...) lie on surfaces, inside
    containers, or in agents' hands (two each). Each episode draws a goal of 3-5
    object predicates from the task, e.g. ``ON(cupcake, coffee_table): 2``.
    Agents see only the room they stand in; closed containers hide their contents.

Action Space
    ``Discrete(53)`` per agent; ``orgteams.envs.core.actions`` encodes and decodes.

    ======  ==========  ==================================================
    id      action      effect
    ======  ==========  ==================================================
    0       wait        nothing
    1-4     move(d)     step north / east / south / west
    5-8     open(d)     open the door or container in direction d
    9-12    close(d)    close it
    13-20   put(d, h)   put the object in hand slot h on/in furniture d
    21-52   pick(d, k)  pick the k-th listed object on/in furniture d
    ======  ==========  ==================================================

    An impossible action (picking where nothing is) is a no-op counted as an
    ``invalid_action`` event (``infos[agent]["invalid_action"]``); an id outside the
    space raises ``ValueError``. The mask of valid actions (int8, 53;
    ``orgteams.envs.core.masks``) has one place per mode: ``infos[agent]["action_mask"]``
    by default, only the observation with ``action_mask_in_obs=True``
    (``{"observation": ..., "action_mask": ...}``, PettingZoo's convention), nowhere with
    ``action_masks=False``.

Observation Encoding
    ``obs_mode="array"`` (default): a ``Dict`` with an egocentric ``image``
    (``(2r+1, 2r+1, 4+K)`` uint8; channels tile, room type, agents, furniture type,
    then per object class counts), ``hands`` and ``goal``; see
    ``orgteams.envs.observe.array_obs``. ``obs_mode="text"``: the text that
    ``env.unwrapped.describe(agent)`` returns. ``obs_mode="flat"`` (one float32 Box
    in [0, 1]) and ``obs_mode="image"`` (channels-first uint8 planes) re-encode the
    array view one-hot for RL libraries; see ``orgteams.envs.observe.rl_obs``.
    ``full_observability=True`` shows the whole house (debugging, RL baselines).
    ``env.state()`` / ``env.state_space``: the global state
    (``orgteams.envs.observe.global_state``).

Rewards
    A shared team reward: 1.0 at the tick the goal is complete. With
    ``reward_shaping=True`` (or ``"units"``), also +1/units for each goal unit placed
    (and -1/units for one taken away); ``"subgoals"`` adds +0.1/units for opening the
    right containers and picking goal objects (``orgteams.envs.core.rewards``). ``units=``
    sets the goal's size (one number or ``(min, max)``).

Termination
    All agents terminate when every goal predicate holds; all are truncated at the
    task's tick limit for the layout (``max_ticks``, or PettingZoo's name
    ``max_cycles``, overrides it; 0 or None keeps the task's).

Infos
    Fixed keys and numbers, so tensor libraries (TorchRL, Tianshou) stack them:
    ``tick``, ``is_success``, one count per event kind of this agent's events this
    tick (``picked``, ``placed``, ``opened``, ``closed``, ``subgoal_done``,
    ``subgoal_undone``, ``collision``, ``invalid_action``; a subgoal event counts for
    every agent) and the ``action_mask`` (above). ``rich_infos=True`` adds ``events``
    (the list of this tick's event dicts) and, in an episode's last infos, ``episode``
    (return ``r``, length ``l``, units done, invalid actions, collisions), what the
    LLM and team layers read; ``env.unwrapped.episode_statistics()`` returns that dict
    at any time.

Single-agent env
    ``single_agent_env(agent, teammates, ...)``: one agent as a ``gymnasium.Env``, its
    teammates given (random, frozen RL policies, planners or LLM members under any
    organization): ad-hoc teamwork (``orgteams.envs.single_agent``).

Vector env
    ``vector_env(num_envs, ...)``: the batched core, ``num_envs`` households of one
    layout stepped as numpy arrays shaped ``(num_envs, num_agents, ...)``, with the
    same dynamics, observations, masks and rewards (``orgteams.envs.vector``);
    ``agent_vector_env(num_envs, ...)``: that core as a ``gymnasium.vector.VectorEnv``
    with every agent one sub-env (``orgteams.envs.vector.agents``).

JAX env
    ``jax_env(...)`` (the ``jax`` extra): pure ``reset(key)`` / ``step(key, state,
    actions)`` of one household, jittable, vmappable and usable in ``lax.scan``, in the
    shape of JaxMARL's ``MultiAgentEnv`` (``orgteams.envs.vector.functional.env``).

Layouts and Tasks
    Layouts: ``studio``, ``apartment``, ``house`` (``assets/layouts``), any YAML
    path, or ``generated:<rooms>:<seed>`` for a procedural house. Tasks:
    ``prepare_afternoon_tea``, ``put_dishwasher_easy``, ``put_dishwasher_hard``,
    ``prepare_food``, ``put_fridge``, ``setup_table``, ``read_book``, ``watch_tv``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pettingzoo.utils import parallel_to_aec

from orgteams.envs.household import HouseholdEnv

raw_env = HouseholdEnv

if TYPE_CHECKING:
    from orgteams.envs.single_agent import SingleAgentEnv
    from orgteams.envs.vector import AgentVectorEnv, VectorHouseholdEnv
    from orgteams.envs.vector.functional.env import HouseholdJaxEnv


def parallel_env(**kwargs) -> HouseholdEnv:
    """The Parallel API env; keyword arguments as :class:`HouseholdEnv`."""
    return HouseholdEnv(**kwargs)


def env(**kwargs):
    """The AEC API env (PettingZoo's parallel_to_aec over :func:`parallel_env`)."""
    return parallel_to_aec(HouseholdEnv(**kwargs))


def single_agent_env(agent: str = "agent_0", teammates: Any = "random",
                     **kwargs) -> SingleAgentEnv:
    """One agent as a single-agent ``gymnasium.Env``; its teammates are given: ``"random"``,
    ``"wait"``, a callable ``policy(observation, action_mask) -> action`` (a frozen RL
    policy), high-level teammates from ``orgteams.play.teammates.make_teammates``
    (planners, LLM members, under any organization), or a dict by agent id. Other
    keyword arguments as :class:`HouseholdEnv` (``obs_mode`` defaults to ``"flat"``).
    See :mod:`orgteams.envs.single_agent`.
    """
    from orgteams.envs.single_agent import SingleAgentEnv

    return SingleAgentEnv(agent, teammates, **kwargs)


def vector_env(num_envs: int, **kwargs) -> VectorHouseholdEnv:
    """``num_envs`` households of one layout stepped as numpy arrays (the batched core).

    Keyword arguments: ``layout``, ``task``, ``num_agents``, ``obs_mode`` (``"flat"`` or
    ``"image"``), ``seed``, and ``view_radius``, ``full_observability``,
    ``reward_shaping``, ``max_ticks``, ``units``, ``image_scale`` as :class:`HouseholdEnv`.
    ``reset()`` / ``step(actions)`` take and return arrays shaped
    ``(num_envs, num_agents, ...)``; finished households reset in the same step
    (Gymnasium's ``AutoresetMode.SAME_STEP``), or at the next one with
    ``autoreset_mode=AutoresetMode.NEXT_STEP``. See :mod:`orgteams.envs.vector`.
    """
    from orgteams.envs.vector import VectorHouseholdEnv

    return VectorHouseholdEnv(num_envs, **kwargs)


def agent_vector_env(num_envs: int, render_mode: str | None = None,
                     **kwargs) -> AgentVectorEnv:
    """``vector_env(num_envs, **kwargs)`` as a ``gymnasium.vector.VectorEnv`` of
    ``num_envs * num_agents`` sub-envs, one per agent, so Gymnasium's vector wrappers
    apply (``autoreset_mode`` as :func:`vector_env`'s; ``render_mode`` None,
    ``"rgb_array"`` or ``"ansi"``). See :mod:`orgteams.envs.vector.agents`.
    """
    from orgteams.envs.vector import AgentVectorEnv, VectorHouseholdEnv

    return AgentVectorEnv(VectorHouseholdEnv(num_envs, **kwargs), render_mode=render_mode)


def jax_env(**kwargs) -> HouseholdJaxEnv:
    """The household as a pure JAX env (JaxMARL's ``MultiAgentEnv`` interface).

    Keyword arguments: ``layout``, ``task``, ``num_agents``, ``obs_mode`` (``"flat"`` or
    ``"image"``), ``view_radius``, ``full_observability``, ``reward_shaping``,
    ``max_ticks``, ``units``, ``image_scale`` as :class:`HouseholdEnv`; ``obs_dtype``
    (``np.float32`` or ``np.uint8``), ``episodes`` and ``seed`` (episode ``j`` is the
    scalar env's ``reset(seed=seed + j)``). ``reset(key) -> (obs, state)``,
    ``step(key, state, actions) -> (obs, state, rewards, dones, infos)``. Needs the
    ``jax`` extra. See :mod:`orgteams.envs.vector.functional.env`.
    """
    from orgteams.envs.vector.functional.env import HouseholdJaxEnv

    return HouseholdJaxEnv(**kwargs)
