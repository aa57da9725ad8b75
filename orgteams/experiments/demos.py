"""Demonstrations for imitation learning: planner-team rollouts saved to disk.

:func:`collect_demos` rolls out teams of :class:`~orgteams.agents.planner.planner.PlannerAgent`
on ``layout`` / ``task`` for each seed and writes, under ``path``:

* one ``<layout>_<task>_n<agents>_s<seed>.npz`` per episode (``numpy.load``):

  ==================  =====================  ==============================================
  key                 shape, dtype           meaning
  ==================  =====================  ==============================================
  ``obs_image``       (T, N, S, S, C) uint8  each agent's array observation *before* tick t
  ``obs_hands``       (T, N, 2) uint8        (the ``household_v0`` ``obs_mode="array"``
  ``obs_goal``        (T, N, 5, 3) uint8     encoding; S = 2 * view_radius + 1)
  ``actions``         (T, N) int16           primitive action ids taken at tick t
  ``rewards``         (T,) float32           team reward of tick t (1.0 when the goal completes)
  ``events``          () str                 JSON: list over ticks of lists of event dicts
                                             (``agent`` is an index; -1 for team events)
  ``decision_tick``   (D,) int32             tick at which a high-level decision was made
  ``decision_round``  (D,) int32             decision round (0-based) of that decision
  ``decision_agent``  (D,) int16             agent index
  ``decision_action`` (D,) str               high-level action id (``"grab:cupcake_1"``)
  ==================  =====================  ==============================================

  T is the episode's ticks and N its agents; ``actions[t]`` applied to the world seen
  in ``obs_*[t]`` gives ``obs_*[t + 1]``.

* ``index.jsonl``: one JSON object per episode, appended as each episode ends:
  ``file`` (the npz name), ``layout``, ``task``, ``num_agents``, ``seed``, ``leader``,
  ``ticks``, ``rounds``, ``success``, ``goal`` (predicate strings), ``view_radius``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from orgteams.agents.planner.planner import PlannerAgent
from orgteams.envs.highlevel.highlevel_env import HighLevelEnv
from orgteams.envs.observe.array_obs import ArrayObserver
from orgteams.organizations.rounds.planner_team import run_team

INDEX_FILE = "index.jsonl"


def collect_demos(layout: str, task: str, num_agents: int, seeds: Iterable[int],
                  path: str | Path, leader: bool = False, view_radius: int = 7) -> list[dict]:
    """Roll out planner teams for each seed; save one ``.npz`` each plus the index.

    Returns the index records written (see the module docstring for the format).
    """
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    env = HighLevelEnv(layout=layout, task=task, num_agents=num_agents,
                       view_radius=view_radius)
    records = []
    for seed in seeds:
        record = _episode(env, int(seed), leader, view_radius, out)
        with open(out / INDEX_FILE, "a") as index:
            index.write(json.dumps(record) + "\n")
        records.append(record)
    return records


def _episode(env: HighLevelEnv, seed: int, leader: bool, view_radius: int, out: Path) -> dict:
    agents = env.possible_agents
    ticks: dict[str, list] = {"image": [], "hands": [], "goal": [], "actions": [],
                              "rewards": [], "events": []}
    observer: list[ArrayObserver] = []

    def on_tick(before, joint, after, infos):
        if not observer or observer[0].scene is not before.scene:
            observer[:] = [ArrayObserver(before.scene, view_radius)]
        obs = [observer[0].observe(before, i) for i in range(len(agents))]
        ticks["image"].append(np.stack([o["image"] for o in obs]))
        ticks["hands"].append(np.stack([o["hands"] for o in obs]))
        ticks["goal"].append(np.stack([o["goal"] for o in obs]))
        ticks["actions"].append([int(joint.get(a, 0)) for a in agents])
        ticks["rewards"].append(1.0 if after.success else 0.0)
        seen, events = set(), []
        for info in infos.values():
            for e in info["events"]:
                key = json.dumps(e, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    events.append(e)
        ticks["events"].append(events)

    decisions: list = []
    team = [PlannerAgent(a, "leader" if leader and i == 0 else "member")
            for i, a in enumerate(agents)]
    result = run_team(env, team, seed=seed, decisions=decisions, on_tick=on_tick)
    scene = env.world.scene
    name = f"{scene.layout.name}_{scene.task}_n{len(agents)}_s{seed}.npz"
    index = {a: i for i, a in enumerate(agents)}
    np.savez_compressed(
        out / name,
        obs_image=np.asarray(ticks["image"], np.uint8),
        obs_hands=np.asarray(ticks["hands"], np.uint8),
        obs_goal=np.asarray(ticks["goal"], np.uint8),
        actions=np.asarray(ticks["actions"], np.int16).reshape(-1, len(agents)),
        rewards=np.asarray(ticks["rewards"], np.float32),
        events=np.array(json.dumps(ticks["events"])),
        decision_tick=np.asarray([d[0] for d in decisions], np.int32),
        decision_round=np.asarray([d[1] for d in decisions], np.int32),
        decision_agent=np.asarray([index[d[2]] for d in decisions], np.int16),
        decision_action=np.asarray([d[3] for d in decisions], dtype=str))
    return {"file": name, "layout": scene.layout.name, "task": scene.task,
            "num_agents": len(agents), "seed": seed, "leader": leader,
            "ticks": result["ticks"], "rounds": result["rounds"],
            "success": result["success"], "goal": [str(p) for p in scene.goal],
            "view_radius": view_radius}


__all__ = ["INDEX_FILE", "collect_demos"]
