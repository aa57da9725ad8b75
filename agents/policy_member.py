"""A frozen RL policy as a team member, beside LLM and planner members.

``orgteams run --backend planner,policy:runs/adhoc/model.zip`` (or, from Python,
``run_episode(backend=["planner", policy])`` with a callable
``policy(observation, action_mask) -> action``) seats a :class:`PolicyMember`: each
round it needs a decision (every tick: its action is one primitive tick,
``primitive:<id>``, which ends the decision round) it builds its agent's observation
of the current world, as ``household_v0.single_agent_env`` built them in training,
and plays the policy's action. It never speaks; in a vote it casts a ballot by the
organization's election rule, as the other silent members do. Rounds last one tick
while it plays, so LLM teammates get asked to talk every tick under organizations
that talk every round.

The observation settings (``obs_mode``, ``view_radius``, ``full_observability``,
``units``, ``image_scale``, ``action_mask_in_obs``, and ``task`` for the goal's
scale) must be those the policy was trained with: :func:`load_policy` reads them from
the JSON file beside the model (``model.json`` for ``model.zip``: the
``single_agent_env`` keyword arguments, as ``examples/adhoc_teamwork.py`` writes them);
a callable gets them as ``settings``. Unset ones are ``single_agent_env``'s defaults
(flat observations, view radius 7) and the episode's task.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from orgteams.agents.member import (
    ActContext,
    ActDecision,
    CommunicateContext,
    CommunicateDecision,
    MemberBase,
)
from orgteams.agents.member_rules import choose_vote
from orgteams.agents.records import DecisionRecord
from orgteams.envs.core import load_task
from orgteams.envs.core.actions import NUM_ACTIONS
from orgteams.envs.highlevel.space import PRIMITIVE
from orgteams.envs.household import HouseholdEnv
from orgteams.errors import MissingExtraError, UserError

if TYPE_CHECKING:
    from orgteams.agents.view import MemberView

Policy = Callable[[Any, np.ndarray], int]
"""``policy(observation, action_mask) -> action id`` (``household_v0.single_agent_env``'s
teammate policies have the same form)."""
OBSERVATION_SETTINGS = ("task", "obs_mode", "view_radius", "full_observability", "units",
                        "image_scale", "action_mask_in_obs")
DEFAULTS = {"obs_mode": "flat"}  # single_agent_env's default; the rest: HouseholdEnv's


class PolicyMember(MemberBase):
    """Plays ``policy`` for ``agent_id``, one primitive action per tick (module docstring).

    Args:
        agent_id: The agent it plays.
        policy: ``policy(observation, action_mask) -> action id``.
        settings: The observation settings the policy was trained with (keys of
            :data:`OBSERVATION_SETTINGS`; others are ignored, so a whole
            ``single_agent_env`` keyword dict may be given).
        name: What decides, for the records and the summary (``policy:<path>``).
    """

    acts_every_round = False

    def __init__(self, agent_id: str, policy: Policy, settings: Mapping[str, Any] | None = None,
                 name: str = "policy"):
        if not callable(policy):
            raise TypeError(f"policy must be callable as policy(observation, action_mask), "
                            f"got {type(policy).__name__}")
        self.agent_id, self.policy, self.model = agent_id, policy, name
        self.settings = {**DEFAULTS, **{k: v for k, v in (settings or {}).items()
                                        if k in OBSERVATION_SETTINGS}}
        self._encoder: HouseholdEnv | None = None

    def observation(self, env: MemberView) -> tuple[Any, np.ndarray]:
        """Its agent's observation of the current world in the policy's settings, and mask."""
        world = env.world
        agents = len(world.agent_pos)
        if self._encoder is None or len(self._encoder.possible_agents) != agents:
            # A household of the trained settings, only to encode this world (its own
            # layout and episodes are never used: reset(options={"state": ...}) below).
            settings = {"task": env.task, **self.settings}  # the trained task's scale, if known
            self._encoder = HouseholdEnv(layout=world.scene.layout, num_agents=agents,
                                         **settings)
        self._encoder.reset(options={"state": world})
        return self._encoder.observe(f"agent_{env.agent_index[self.agent_id]}")

    async def communicate(self, ctx: CommunicateContext, env: MemberView) -> CommunicateDecision:
        """Silent; a ballot by the election rule in a vote stage."""
        record = DecisionRecord("communicate", self.agent_id, ctx.round, model=self.model)
        vote = None
        if ctx.stage_kind == "vote" and ctx.candidates:
            vote = choose_vote(ctx.rules, self.agent_id, ctx.candidates, ctx.round)
            record.parsed = {"vote": vote, "rule": ctx.rules.vote}
        return CommunicateDecision([], None, False, vote, "", record)

    async def act(self, env: MemberView, round: int, ctx: ActContext | None = None
                  ) -> ActDecision:
        """The policy's action for this tick, as ``primitive:<id>``."""
        obs, mask = self.observation(env)
        action = self.policy(obs, mask)
        if isinstance(action, np.ndarray) and action.size == 1:
            action = action.reshape(()).item()
        if isinstance(action, bool | np.bool_) or not isinstance(action, int | np.integer) \
                or not 0 <= action < NUM_ACTIONS:
            raise ValueError(f"{self.agent_id}: the policy returned {action!r}, not an action "
                             f"id in Discrete({NUM_ACTIONS})")
        ident = f"{PRIMITIVE}{int(action)}"
        record = DecisionRecord("act", self.agent_id, round, parsed={"action": ident},
                                model=self.model)
        return ActDecision(ident, "", record)


def load_policy(path: str | Path, seed: int | None = None, deterministic: bool = False
                ) -> tuple[Policy, dict[str, Any]]:
    """A saved Stable-Baselines3 or sb3-contrib model (``model.zip``, a PPO or a
    ``MaskablePPO``) as a :data:`Policy`, and the settings in the JSON file beside it
    (``model.json``: keyword arguments of ``single_agent_env``, or ``{"setting":
    {...}}``; none: ``{}``).

    The policy draws from the model's action distribution restricted to the mask, with
    its own generator seeded by ``seed`` (a run's seed replays it); ``deterministic``
    takes the most likely valid action instead. Sampling is the default: a
    deterministic policy that waits or bumps in some state repeats it forever (the
    ad-hoc example's learner: 0.93 held-out success sampled, 0.33 argmax).

    SB3 unpickles the objects saved in the model (its policy class, spaces, a custom
    network kept by value): loading one runs code from it. Load only trusted models.

    Raises:
        UserError: No such file, or not a model file SB3 saved (one line naming it).
        MissingExtraError: Stable-Baselines3 is not installed (the ``rl`` extra).
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"policy {str(path)!r}: no such file")
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise UserError(f"policy {str(path)!r}: not a model saved by Stable-Baselines3 "
                        f"({exc})") from None
    maskable = "sb3_contrib" in json.dumps(data.get("policy_class", ""))
    try:
        if maskable:
            from sb3_contrib import MaskablePPO as Algorithm
        else:
            from stable_baselines3 import PPO as Algorithm
    except ImportError as exc:
        raise MissingExtraError("a policy member (policy:<model.zip>) needs Stable-Baselines3: "
                                "pip install 'orgteams[rl]'") from exc
    import torch

    settings = _settings_beside(path)
    model = Algorithm.load(path, device="cpu")
    rng = np.random.default_rng(seed)
    shape = getattr(model.observation_space, "shape", None)  # None: a Dict space
    dtype = getattr(model.observation_space, "dtype", None)

    def policy(observation: Any, action_mask: np.ndarray) -> int:
        # else a traceback deep inside SB3 (shape), or actions from misread inputs (a
        # model trained on raw uint8 observations given float32 ones: train_ppo.py's
        # --obs-dtype uint8)
        if shape and (np.shape(observation) != shape or np.asarray(observation).dtype != dtype):
            raise UserError(
                f"policy {str(path)!r} takes observations of shape {shape} {dtype}, this run "
                f"gives {np.shape(observation)} {np.asarray(observation).dtype}: "
                f"{path.with_suffix('.json')} must hold the settings it was trained with "
                f"({', '.join(OBSERVATION_SETTINGS)})")
        mask = np.asarray(action_mask, dtype=bool)
        tensor, _ = model.policy.obs_to_tensor(observation)
        with torch.no_grad():
            dist = model.policy.get_distribution(tensor, **(
                {"action_masks": mask} if maskable else {}))
            probs = dist.distribution.probs[0].cpu().numpy().astype(np.float64)
        probs = np.where(mask, probs, 0.0)  # a plain PPO knows no mask: applied here
        if deterministic or probs.sum() <= 0:
            return int(np.argmax(np.where(mask, probs + 1e-12, -1.0)))
        return int(rng.choice(len(probs), p=probs / probs.sum()))

    return policy, settings


def _settings_beside(path: Path) -> dict[str, Any]:
    """The env settings in the JSON file beside the model (none: ``{}``), their
    observation settings checked here, so a bad one names the file before the episode."""
    beside = path.with_suffix(".json")
    if not beside.is_file():
        return {}
    try:
        loaded = json.loads(beside.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"{beside}: not JSON ({exc})") from None
    if not isinstance(loaded, dict):
        raise UserError(f"{beside}: expected an object of env settings")
    settings = dict(loaded.get("setting", loaded))
    observing = {k: settings[k] for k in OBSERVATION_SETTINGS if k in settings}
    # units depend on the task, the task's objects on the run's layout: those two are
    # checked when the member first observes; the task's name and the rest here.
    task, _ = observing.pop("task", None), observing.pop("units", None)
    try:
        if isinstance(task, str):
            load_task(task)
        elif task is not None:
            raise UserError(f"task must be a task name, got {task!r}")
        HouseholdEnv(**{**DEFAULTS, **observing})
    except ValueError as exc:  # UserError and the env's own checks
        raise UserError(f"{beside}: {exc}") from None
    return settings


__all__ = ["OBSERVATION_SETTINGS", "Policy", "PolicyMember", "load_policy"]
