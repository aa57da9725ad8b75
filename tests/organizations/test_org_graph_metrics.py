"""Graph metrics on small graphs with known values."""

import re

import networkx as nx
import pytest

from orgteams.organizations import (
    algebraic_connectivity,
    centralization,
    hierarchy_depth,
    spectral_gap,
)


def star():
    return nx.DiGraph([("c", "a"), ("c", "b"), ("c", "d")])


def chain():
    return nx.DiGraph([("a", "b"), ("b", "c")])


def disconnected():
    return nx.DiGraph([("a", "b"), ("c", "d")])


def test_star():
    assert hierarchy_depth(star()) == 1
    assert spectral_gap(star()) == pytest.approx(1.0)
    assert centralization(star()) == 1.0


def test_chain():
    assert hierarchy_depth(chain()) == 2
    assert hierarchy_depth(chain(), roots=["b"]) == 1
    assert spectral_gap(chain()) == pytest.approx(1.0)
    assert centralization(nx.path_graph(4, create_using=nx.DiGraph)) == pytest.approx(1 / 3)


def test_triangle_and_weights():
    k3 = nx.complete_graph(3, create_using=nx.DiGraph)
    assert spectral_gap(k3) == pytest.approx(1.5)
    # both directions of every edge: weight 2 each, and lambda_2(L) of K3 is 3 * weight
    assert algebraic_connectivity(k3) == pytest.approx(6.0)
    assert algebraic_connectivity(star()) == pytest.approx(1.0)
    assert algebraic_connectivity(chain()) == pytest.approx(1.0)
    assert algebraic_connectivity(disconnected()) == 0.0
    assert centralization(k3) == 0.0
    # a two-way chain: the middle node sends most, so it is the root
    g = nx.DiGraph()
    g.add_weighted_edges_from([("a", "b", 1), ("b", "a", 3), ("b", "c", 3), ("c", "b", 1)])
    assert hierarchy_depth(g) == 1


def test_disconnected_and_tiny():
    assert spectral_gap(disconnected()) == 0.0
    assert hierarchy_depth(disconnected()) == 1
    one = nx.DiGraph()
    one.add_node("a")
    assert (hierarchy_depth(one), spectral_gap(one), centralization(one)) == (0, 0.0, 0.0)
    empty = nx.DiGraph()
    assert (hierarchy_depth(empty), spectral_gap(empty), centralization(empty)) == (0, 0.0, 0.0)
    isolated = star()
    isolated.add_node("z")
    assert spectral_gap(isolated) == 0.0


def test_self_loops_and_zero_weights_ignored():
    g = star()
    g.add_edge("a", "a", weight=5)
    g.add_edge("a", "d", weight=0)
    assert spectral_gap(g) == pytest.approx(1.0)
    assert hierarchy_depth(g) == 1


def test_unknown_root():
    with pytest.raises(
        ValueError, match=re.escape("hierarchy_depth(): roots not in the graph: ['q']")
    ):
        hierarchy_depth(star(), roots=["q"])
