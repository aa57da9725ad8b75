"""examples/lean_ppo.py: a tiny training run on the batched core, what it stored and used."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from doubles import load_script

torch = pytest.importorskip("torch", reason="needs the rl extra")
# train_ppo.py, which lean_ppo reuses, needs it
pytest.importorskip("stable_baselines3", reason="needs the rl extra")

EXAMPLE = Path(__file__).parents[2] / "examples" / "lean_ppo.py"


@pytest.fixture(scope="module")
def lean():
    # registered: dataclasses look their module up while defining
    yield load_script(EXAMPLE, register=True)
    del sys.modules["lean_ppo"]


def tiny(lean, **kw):
    return lean.Config(**{"envs": 3, "ticks": 8, "hidden": 8, "epochs": 2,
                          "minibatches": 2, "bf16": 0, **kw})


class Recorder:
    """Wraps the learner's env.step: keeps what the env returned at each tick."""

    def __init__(self, env):
        self.step, self.calls = env.step, []

    def __call__(self, actions):
        out = self.step(actions)
        obs, rew, term, trunc, infos = out
        self.calls.append((np.array(obs), rew.copy(), term.copy(), trunc.copy(),
                           {k: infos[k] for k in ("final_obs", "_final_obs") if k in infos}))
        return out


@pytest.mark.parametrize("bf16", [0, 1])
def test_tiny_training_changes_the_network_with_finite_losses(lean, bf16):
    learner = lean.Learner(tiny(lean, bf16=bf16), seed=3, max_ticks=5)
    before = [p.detach().clone() for p in learner.net.parameters()]
    for _ in range(3):
        learner.collect()
        stats = learner.update()
    assert learner.steps == 3 * 8 * 3 * 2
    assert all(np.isfinite(v) for v in stats.values()) and set(stats) == {
        "loss", "pg", "vf", "entropy"}
    changed = [not torch.equal(a, b) for a, b in zip(before, learner.net.parameters())]
    assert all(changed), changed  # every tensor, the first layer's included
    assert len(learner.episodes) >= 3  # max_ticks=5 in 24 ticks: every household ended


def test_every_sampled_action_is_valid_under_the_mask_the_env_gave(lean):
    learner = lean.Learner(tiny(lean), seed=5, max_ticks=6)
    step = learner.env.step
    for _ in range(4):
        seen = []  # the mask in force at each tick, as the env reported it

        def checked(actions, seen=seen):
            seen.append(actions.copy())
            return step(actions)
        masks_before = learner.masks[-1].clone()
        learner.env.step = checked
        learner.collect()
        learner.update()
        stored = learner.masks[:-1]
        assert torch.equal(stored[0], masks_before)  # the rollout starts where the last ended
        played = torch.from_numpy(np.stack(seen).reshape(8, -1))
        assert torch.equal(played, learner.actions)
        assert bool(stored.gather(2, played[..., None]).all())
    assert learner.invalid_sampled == 0
    # sample() never picks a masked action, even when one action alone is valid
    logits = torch.randn(1000, 53) * 10
    only = torch.zeros(1000, 53, dtype=torch.bool)
    only[torch.arange(1000), torch.arange(1000) % 53] = True
    actions, logp = lean.sample(logits, only)
    assert torch.equal(actions, torch.arange(1000) % 53)
    assert torch.allclose(logp, torch.zeros(1000))


def test_a_truncated_episode_bootstraps_from_its_final_observation(lean):
    cfg = tiny(lean)
    learner = lean.Learner(cfg, seed=7, max_ticks=5)
    rec = Recorder(learner.env)
    learner.env.step = rec
    learner.collect()
    cut_ticks = [t for t, c in enumerate(rec.calls) if c[3].any()]
    assert cut_ticks, "no household was cut short at max_ticks=5 in 8 ticks"
    for t in cut_ticks:
        obs, rew, term, trunc, infos = rec.calls[t]
        for i in np.flatnonzero(trunc[:, 0] & ~term[:, 0]):
            final = torch.from_numpy(infos["final_obs"][i]).float()
            after_reset = learner.obs[t + 1, 2 * i:2 * i + 2]
            assert not torch.equal(final, after_reset)  # not the new episode's first
            with torch.no_grad():
                expected = torch.from_numpy(rew[i]).float() + cfg.gamma * \
                    learner.net.value(final)
            assert torch.allclose(learner.rewards[t, 2 * i:2 * i + 2], expected)
            assert bool(learner.dones[t, 2 * i:2 * i + 2].all())
    # an untruncated tick keeps the env's reward as it was
    quiet = next(t for t, c in enumerate(rec.calls) if not c[3].any() and not c[2].any())
    assert torch.allclose(learner.rewards[quiet],
                          torch.from_numpy(rec.calls[quiet][1].reshape(-1)).float())


def test_a_done_step_does_not_look_past_itself_in_gae(lean):
    cfg = tiny(lean, ticks=2, minibatches=1)
    learner = lean.Learner(cfg, seed=1)
    learner.rewards[:] = torch.tensor([[1.0], [2.0]])
    learner.values[:] = torch.tensor([[0.5], [0.25]])
    learner.dones[:] = torch.tensor([[1.0], [0.0]])
    with torch.no_grad():
        nxt = learner.net.value(learner.obs[-1])
    adv, ret = learner.advantages()
    last = 2.0 + cfg.gamma * nxt - 0.25
    assert torch.allclose(adv[1], last)
    assert torch.allclose(adv[0], torch.full_like(adv[0], 1.0 - 0.5))  # done: no bootstrap
    assert torch.allclose(ret, adv + learner.values)


def test_ticks_must_split_into_minibatches(lean):
    with pytest.raises(ValueError, match=re.escape(
            "--ticks (6) must be a multiple of --minibatches (4)")):
        lean.Learner(tiny(lean, ticks=6, minibatches=4))


def test_train_writes_the_curve_it_evaluated(lean, tmp_path):
    result = lean.train(tiny(lean, envs=2, ticks=4, epochs=1), timesteps=32,
                        out=tmp_path, seed=0, eval_every=16, episodes=2)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["timesteps"] == 32 and [c[0] for c in saved["curve"]] == [16, 32]
    assert all(c[1] in (0.0, 0.5, 1.0) for c in saved["curve"])
    assert saved["invalid_sampled"] == 0 and saved["config"]["hidden"] == 8
    assert [list(c) for c in result["curve"]] == saved["curve"]
    assert result["held_out_success"] == saved["curve"][-1][1]


def test_measure_reports_both_rates_and_their_ratio(lean):
    r = lean.measure(tiny(lean, envs=2, ticks=4), slices=1, updates=1)
    assert r["raw"] > 0 and r["lean"] > 0 and r["raw_ids"] > 0
    assert r["ratio"] == pytest.approx(r["raw"] / r["lean"])


@pytest.mark.parametrize("argv, line", [
    # 0 households, minibatches or updates failed deep in the loop (num_envs, a modulo
    # and a division by zero), 0 timesteps indexed an empty curve
    (["--envs", "0"], "argument --envs: must be positive, got 0"),
    (["--minibatches", "0"], "argument --minibatches: must be positive, got 0"),
    (["--measure", "--updates", "0"], "argument --updates: must be positive, got 0"),
    (["--timesteps", "0"], "argument --timesteps: must be positive, got 0"),
    (["--bf16", "2"], "argument --bf16: invalid choice: 2 (choose from 0, 1)"),
])
def test_bad_counts_are_one_line_before_anything_runs(lean, capsys, argv, line):
    with pytest.raises(SystemExit) as stop:
        lean.main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f": error: {line}")  # prog: argv[0]
