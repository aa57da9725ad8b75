"""Taking an agent out of a team's work on the high-level env, without breaking the house.

A removed agent stays in the house (its body is part of the world) but must not take
anything out of the game: :func:`remove_agent` makes it idle and pushable (a removed
member standing in a doorway or the one-cell corridor must not seal half the house,
see :meth:`~orgteams.envs.highlevel.highlevel_env.HighLevelEnv.set_idle`) and sets down what it
holds on the nearest surface with room, where every teammate is told it is (as if it
said so while leaving), so no goal object is lost with it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from orgteams.envs.core.catalog import load_catalog

if TYPE_CHECKING:
    from orgteams.envs.highlevel.highlevel_env import HighLevelEnv

__all__ = ["remove_agent"]


def remove_agent(env: HighLevelEnv, agent: str) -> list[tuple[str, str]]:
    """Make ``agent`` idle (pushable) and set down what it holds.

    Each held object goes onto the surface (a non-container furniture) with room that is
    nearest to the agent by walking distance; every agent's memory notes where it went.

    Returns:
        ``(object, furniture)`` for every object set down, in hand order.
    """
    env.set_idle(agent, True, obstacle=False)
    base = env.base
    world = base.world
    a = base.agent_index[agent]
    held = world.hands[a]
    if not held:
        return []
    catalog = load_catalog()
    furniture = world.scene.layout.furniture
    contents = [list(c) for c in world.contents]
    here = world.agent_pos[a]
    surfaces = sorted(
        (env.nav.distance(here, env.nav.furniture_goal(i)), i)
        for i, f in enumerate(furniture) if not catalog.furniture[f.type].is_container)
    placed: list[tuple[str, str]] = []
    for obj in held:
        spot = next((i for _, i in surfaces
                     if len(contents[i]) < catalog.furniture[furniture[i].type].capacity), None)
        if spot is None:
            break  # no surface has room: it keeps the rest (the house is full)
        contents[spot].append(obj)
        placed.append((world.scene.objects[obj], furniture[spot].name))
    if not placed:
        return []
    hands = list(world.hands)
    hands[a] = held[len(placed):]
    # progress=() makes the state recompute it (objects may have landed on a target)
    base.world = replace(world, hands=hands, contents=[tuple(c) for c in contents],
                         progress=())
    for mem in (env.memory(x) for x in env.possible_agents):
        for obj, spot in placed:
            mem.note_object(obj, spot, world.tick)
    return placed
