"""A frozen RL policy on a team (PolicyMember): a callable through run_episode, a saved
model through the ``policy:<model.zip>`` member spec, beside planners under an
organization. Checked on what the episode did: its log, the world, the policy's calls."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from doubles import log_dicts, run

from orgteams import run_episode
from orgteams.agents.member import MemberBase
from orgteams.agents.policy_member import PolicyMember, load_policy
from orgteams.agents.records import DecisionRecord
from orgteams.agents.view import MemberView
from orgteams.envs import household_v0
from orgteams.envs.highlevel import HighLevelEnv
from orgteams.errors import UserError
from orgteams.organizations import load_organization
from orgteams.organizations.rounds.episode_log import read_log
from orgteams.organizations.rounds.runner import TeamRunner
from orgteams.run import build_member

SETTING = {"layout": "studio", "task": "put_dishwasher_easy", "num_agents": 2}


def last_valid(obs, mask) -> int:
    return int(np.flatnonzero(mask)[-1])


def test_its_observation_is_the_single_agent_envs_for_that_world():
    env = HighLevelEnv(**SETTING)
    env.reset(seed=5)
    view = MemberView(env)
    member = PolicyMember("agent_1", last_valid, {"view_radius": 4, "full_observability": True,
                                                  "layout": "ignored: the world's"})
    obs, mask = member.observation(view)
    plain = household_v0.single_agent_env("agent_1", "wait", view_radius=4,
                                          full_observability=True, **SETTING)
    plain.base.reset(options={"state": env.world})
    want, want_mask = plain.base.observe("agent_1")
    np.testing.assert_array_equal(obs, want)
    np.testing.assert_array_equal(mask, want_mask)
    decision = run(member.act(view, 0))
    assert decision.action_id == f"primitive:{int(np.flatnonzero(mask)[-1])}"
    assert decision.record.model == "policy"


def test_a_callable_policy_plays_every_tick_beside_a_planner_leader(tmp_path):
    calls = []

    def policy(obs, mask):
        calls.append(obs.shape)
        return last_valid(obs, mask)

    log = tmp_path / "episode.jsonl"
    result = run_episode(task=SETTING["task"], layout=SETTING["layout"], organization="leader",
                         agents=2, backend=["planner", policy], seed=3, max_ticks=40,
                         log_path=log)
    summary = result.summary
    assert summary["members"] == {"agent_0": "planner", "agent_1": f"policy:{policy.__qualname__}"}
    assert summary["ticks"] == summary["rounds"] == len(calls)  # a round per tick
    assert set(calls) == {household_v0.single_agent_env(**SETTING).observation_space.shape}
    records = log_dicts(read_log(log))
    acts = [r for r in records if r.get("kind") == "action" and r.get("agent") == "agent_1"]
    assert len(acts) == len(calls)
    assert all(re.fullmatch(r"primitive:\d+", r["action"]) and r["fallback"] is None
               for r in acts)
    assigns = [r for r in records if r.get("message_kind") == "assign"]
    assert assigns and "agent_1" in {a for r in assigns for a in r["delivered"]}


def test_a_priced_run_with_a_callable_policy_plays_it_calls_no_model():
    result = run_episode(task=SETTING["task"], layout=SETTING["layout"], organization="leader",
                         agents=2, backend=["planner", last_valid], seed=0, max_ticks=5,
                         log_path=None, max_cost=1.0)
    assert result.summary["ticks"] == 5 and result.summary["episode_status"] == "complete"


class Malformed(MemberBase):
    """Answers a primitive id outside the action space (an LLM could)."""

    model = "malformed"

    def __init__(self, agent_id):
        self.agent_id = agent_id

    async def communicate(self, ctx, env):
        from orgteams.agents.member import CommunicateDecision

        return CommunicateDecision([], None, False, None, "", DecisionRecord(
            "communicate", self.agent_id, ctx.round, model=self.model))

    async def act(self, env, round, ctx=None):
        from orgteams.agents.member import ActDecision

        return ActDecision("primitive:99", "", DecisionRecord("act", self.agent_id, round,
                                                              model=self.model))


def test_a_malformed_primitive_id_falls_back_to_the_safe_action():
    env = HighLevelEnv(**SETTING)
    members = {"agent_0": Malformed("agent_0"), "agent_1": PolicyMember("agent_1", last_valid)}
    result = TeamRunner(env, load_organization("none"), members, max_rounds=2).run(seed=0)
    acts = [r for r in log_dicts(result.records)
            if r.get("kind") == "action" and r["agent"] == "agent_0"]
    assert acts and all(r["action"] == "wait" and r["fallback"] ==
                        "runner: 'primitive:99' not available" for r in acts[:1])


def test_a_policy_outside_the_action_space_is_one_line():
    env = HighLevelEnv(**SETTING)
    env.reset(seed=0)
    member = PolicyMember("agent_0", lambda o, m: 53)
    with pytest.raises(ValueError, match=re.escape(
            "agent_0: the policy returned 53, not an action id in Discrete(53)")):
        run(member.act(MemberView(env), 0))


def test_bad_policy_specs_are_one_line(tmp_path):
    with pytest.raises(UserError, match=re.escape(
            "member spec 'policy': a policy member needs its model file: "
            "policy:<path/to/model.zip>")):
        build_member("agent_0", "policy")
    with pytest.raises(UserError, match=re.escape(
            f"policy {str(tmp_path / 'nope.zip')!r}: no such file")):
        build_member("agent_0", f"policy:{tmp_path / 'nope.zip'}")
    junk = tmp_path / "junk.zip"
    junk.write_text("not a zip")
    with pytest.raises(UserError, match=re.escape(
            f"policy {str(junk)!r}: not a model saved by Stable-Baselines3")):
        load_policy(junk)


def test_a_saved_maskable_ppo_model_is_a_policy_member_spec(tmp_path):
    """policy:<model.zip> beside a planner: the member draws from the saved model's masked
    distribution with a generator seeded by the run's seed (so the run replays), on
    observations made with the settings in model.json."""
    pytest.importorskip("sb3_contrib", reason="needs the rl extra")
    import torch
    from sb3_contrib import MaskablePPO

    setting = {**SETTING, "view_radius": 3, "max_ticks": 30}
    env = household_v0.single_agent_env("agent_1", "wait", **setting)
    model = MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=32, n_epochs=1, seed=0,
                        policy_kwargs={"net_arch": [16]})
    model.learn(32)
    model.save(tmp_path / "model.zip")
    (tmp_path / "model.json").write_text(json.dumps({"setting": setting}))
    policy, settings = load_policy(tmp_path / "model.zip")
    assert settings == setting
    member = build_member("agent_1", f"policy:{tmp_path / 'model.zip'}", seed=1)
    assert member.model == f"policy:{tmp_path / 'model.zip'}"
    assert member.settings == {"obs_mode": "flat", "task": "put_dishwasher_easy",
                               "view_radius": 3}
    spec = f"planner,policy:{tmp_path / 'model.zip'}"
    runs = [run_episode(task="put_dishwasher_easy", layout="studio", organization="leader",
                        agents=2, backend=spec, seed=1, max_ticks=20, log_path=None)
            for _ in range(2)]
    acts = [[r["action"] for r in log_dicts(run.records) if r.get("kind") == "action"
             and r["agent"] == "agent_1" and r["fallback"] is None] for run in runs]
    assert len(acts[0]) == runs[0].summary["ticks"] == 20
    assert acts[0] == acts[1]  # the seeded draws replay
    # the first draw: the seeded generator over the model's masked probabilities
    hl = HighLevelEnv(**{k: setting[k] for k in ("layout", "task", "num_agents")})
    hl.reset(seed=1)
    obs, mask = member.observation(MemberView(hl))
    first, _ = load_policy(tmp_path / "model.zip", seed=1)
    assert acts[0][0] == f"primitive:{first(obs, mask)}"
    # deterministic: the model's own masked argmax
    argmax, _ = load_policy(tmp_path / "model.zip", deterministic=True)
    want = int(model.predict(obs, action_masks=mask, deterministic=True)[0])
    assert argmax(obs, mask) == want
    with torch.no_grad():
        probs = model.policy.get_distribution(model.policy.obs_to_tensor(obs)[0],
                                              action_masks=mask).distribution.probs[0]
    assert (probs[~mask.astype(bool)] == 0).all()  # the masked distribution it draws from


def test_a_model_whose_settings_do_not_match_the_run_is_one_line(tmp_path):
    """A model.zip without its model.json (train_ppo.py writes none) or with a bad one:
    the episode died in SB3 ("Unexpected observation shape (8764,) for Box environment"),
    or, for a bad value, on a line that did not name the file."""
    pytest.importorskip("sb3_contrib", reason="needs the rl extra")
    from sb3_contrib import MaskablePPO

    env = household_v0.single_agent_env("agent_1", "wait", **SETTING, view_radius=3)
    zipped = tmp_path / "model.zip"
    MaskablePPO("MlpPolicy", env, n_steps=32, policy_kwargs={"net_arch": [16]}).save(zipped)
    spec = f"planner,policy:{zipped}"
    shape = env.observation_space.shape
    with pytest.raises(UserError, match=re.escape(
            f"policy {str(zipped)!r} takes observations of shape {shape} float32, this run "
            f"gives (8764,) float32: {tmp_path / 'model.json'} must hold the settings it was "
            "trained with "
            "(task, obs_mode, view_radius, full_observability, units, image_scale, "
            "action_mask_in_obs)")):
        run_episode(task="put_dishwasher_easy", layout="studio", organization="leader",
                    agents=2, backend=spec, seed=0, max_ticks=5, log_path=None)
    for settings, problem in [
            ({"view_radius": "x"}, "view_radius must be an integer from 1 to 512, got 'x'"),
            ({"setting": {"obs_mode": "pixels"}},
             "obs_mode must be one of ('array', 'text', 'flat', 'image'), got 'pixels'"),
            ({"task": "tea"}, "Unknown task 'tea'."),
            ({"task": 3}, "task must be a task name, got 3")]:
        (tmp_path / "model.json").write_text(json.dumps(settings))
        with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'model.json'}: {problem}")):
            build_member("agent_1", f"policy:{zipped}")


def test_a_model_of_raw_uint8_observations_is_refused_not_fed_floats(tmp_path):
    """train_ppo.py --obs-dtype uint8 saves a model of the core's raw uint8 observations,
    of the same shape as the float32 ones a member builds: it played on misread inputs."""
    pytest.importorskip("sb3_contrib", reason="needs the rl extra")
    import gymnasium
    from gymnasium import spaces
    from sb3_contrib import MaskablePPO

    setting = {**SETTING, "view_radius": 3}
    flat = household_v0.single_agent_env("agent_1", "wait", **setting).observation_space

    class RawEnv(gymnasium.Env):  # the raw uint8 observations' space, nothing else
        observation_space = spaces.Box(0, 255, flat.shape, np.uint8)
        action_space = spaces.Discrete(53)

    zipped = tmp_path / "model.zip"
    MaskablePPO("MlpPolicy", RawEnv(), n_steps=32, policy_kwargs={"net_arch": [16]}).save(
        zipped)
    (tmp_path / "model.json").write_text(json.dumps(setting))
    with pytest.raises(UserError, match=re.escape(
            f"policy {str(zipped)!r} takes observations of shape {flat.shape} uint8, this run "
            f"gives {flat.shape} float32")):
        run_episode(task="put_dishwasher_easy", layout="studio", organization="leader",
                    agents=2, backend=f"planner,policy:{zipped}", seed=0, max_ticks=5,
                    log_path=None)
