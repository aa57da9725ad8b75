"""The communicate phase's routing shortcuts equal :func:`route`, the one routing rule."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from orgteams.agents.messages import EVERYONE
from orgteams.organizations.protocols.schedule import route
from orgteams.organizations.rounds.phases import _reaches
from orgteams.organizations.spec.library import load_organization

TEAM = [f"agent_{i}" for i in range(9)]


@pytest.mark.parametrize("name", ["shared", "leader", "pyramid", "chain", "none"])
def test_whether_a_message_reaches_anyone_is_what_route_delivers_less_the_removed(name):
    resolved = load_organization(name).resolve(TEAM)
    rng = random.Random(name)
    for _ in range(400):
        removed = set(rng.sample(TEAM, rng.choice([0, 0, 1, 3, 8])))
        state = SimpleNamespace(resolved=resolved, removed=removed)
        agent = rng.choice(TEAM)
        receivers = rng.choice([EVERYONE, tuple(rng.sample(TEAM + ["agent_99"],
                                                           rng.randint(0, 4)))])
        plain = any(b not in removed for b in route(agent, receivers, resolved)[0])
        assert _reaches(state, agent, receivers) == plain
    with pytest.raises(ValueError, match="unknown agent 'agent_99'"):
        _reaches(SimpleNamespace(resolved=resolved, removed=set()), "agent_99", EVERYONE)
