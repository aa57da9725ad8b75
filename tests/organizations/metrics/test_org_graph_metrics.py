"""Graph metrics on small graphs with known values."""

import re

import networkx as nx
import pytest

from orgteams.organizations import (
    algebraic_connectivity,
    algebraic_connectivity_binary,
    centralization,
    hierarchy_depth,
    message_reach_depth,
    spectral_gap,
)


def star():
    return nx.DiGraph([("c", "a"), ("c", "b"), ("c", "d")])


def chain():
    return nx.DiGraph([("a", "b"), ("b", "c")])


def disconnected():
    return nx.DiGraph([("a", "b"), ("c", "d")])


def test_star():
    assert message_reach_depth(star()) == 1
    assert spectral_gap(star()) == pytest.approx(1.0)
    assert centralization(star()) == 1.0


def test_chain():
    assert message_reach_depth(chain()) == 2
    assert message_reach_depth(chain(), roots=["b"]) == 1
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
    assert message_reach_depth(g) == 1


def test_disconnected_and_tiny():
    assert spectral_gap(disconnected()) == 0.0
    assert message_reach_depth(disconnected()) == 1
    one = nx.DiGraph()
    one.add_node("a")
    assert (message_reach_depth(one), spectral_gap(one), centralization(one)) == (0, 0.0, 0.0)
    empty = nx.DiGraph()
    assert (message_reach_depth(empty), spectral_gap(empty), centralization(empty)) == (0, 0.0, 0.0)
    isolated = star()
    isolated.add_node("z")
    assert spectral_gap(isolated) == 0.0


def test_self_loops_and_zero_weights_ignored():
    g = star()
    g.add_edge("a", "a", weight=5)
    g.add_edge("a", "d", weight=0)
    assert spectral_gap(g) == pytest.approx(1.0)
    assert message_reach_depth(g) == 1


def test_unknown_root():
    with pytest.raises(
        ValueError, match=re.escape("message_reach_depth(): roots not in the graph: ['q']")
    ):
        message_reach_depth(star(), roots=["q"])


def test_algebraic_connectivity_known_values():
    from orgteams.organizations.metrics.graph import algebraic_connectivity

    assert algebraic_connectivity(chain()) == pytest.approx(1.0)
    assert algebraic_connectivity(star()) == pytest.approx(1.0)
    # both directions of every pair: undirected weight 2, so 2 x 3.0 (K3 at unit weight)
    assert algebraic_connectivity(nx.complete_graph(3, create_using=nx.DiGraph)) == (
        pytest.approx(6.0))
    doubled = nx.DiGraph()
    doubled.add_weighted_edges_from([("a", "b", 2), ("b", "c", 2)])
    assert algebraic_connectivity(doubled) == pytest.approx(2.0)
    assert spectral_gap(doubled) == pytest.approx(1.0)  # normalized: weights scale out
    assert algebraic_connectivity(disconnected()) == 0.0


def test_spectral_gap_matches_networkx_on_weighted_graphs():
    """The numpy version gives networkx's (scipy-backed) values, to 1e-9."""
    pytest.importorskip("scipy")
    import numpy as np

    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 8):
        g = nx.gnp_random_graph(n, 0.7, seed=int(rng.integers(1000)), directed=True)
        for u, v in g.edges:
            g[u][v]["weight"] = int(rng.integers(1, 6))
        h = nx.Graph()
        h.add_nodes_from(g.nodes)
        for u, v, d in g.edges(data=True):
            prior = h[u][v]["weight"] if h.has_edge(u, v) else 0
            h.add_edge(u, v, weight=prior + d["weight"])
        if not nx.is_connected(h):
            continue
        lap = nx.normalized_laplacian_matrix(h, weight="weight").toarray()
        assert spectral_gap(g) == pytest.approx(np.sort(np.linalg.eigvalsh(lap))[1], abs=1e-9)


def test_graph_metrics_need_no_scipy():
    """The core metric runs where scipy cannot be imported (it is an optional extra)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['scipy'] = None\n"
        "import networkx as nx\n"
        "from orgteams.organizations.metrics.graph import spectral_gap, algebraic_connectivity\n"
        "g = nx.complete_graph(3, create_using=nx.DiGraph)\n"
        "print(spectral_gap(g), algebraic_connectivity(g))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1.5", "6.0"]


def test_hierarchy_depth_is_the_longest_dependency_chain():
    assert hierarchy_depth(nx.DiGraph()) == 0
    nobody = nx.DiGraph()
    nobody.add_nodes_from(["a", "b", "c"])
    assert hierarchy_depth(nobody) == 0  # nobody depends on anybody
    assert hierarchy_depth(star()) == 1  # members carry out one leader's orders
    pyramid = nx.DiGraph([("l", "v1"), ("l", "v2"), ("v1", "m1"), ("v1", "m2"),
                          ("v2", "m3"), ("v2", "m4")])
    assert hierarchy_depth(pyramid) == 2
    assert hierarchy_depth(chain()) == 2


def test_hierarchy_depth_counts_mutual_dependence_as_one_level():
    # a and b deferred to each other in different rounds: peers, not a hierarchy
    peers = nx.DiGraph([("a", "b"), ("b", "a")])
    assert hierarchy_depth(peers) == 0
    assert hierarchy_depth(nx.DiGraph([("a", "b"), ("b", "a"), ("b", "c")])) == 1
    g = star()
    g.add_edge("a", "a", weight=3)  # self-loops and zero weights count nothing
    g.add_edge("a", "d", weight=0)
    assert hierarchy_depth(g) == 1


def test_binary_algebraic_connectivity_ignores_message_counts():
    k3 = nx.complete_graph(3, create_using=nx.DiGraph)
    busy = nx.DiGraph()
    busy.add_weighted_edges_from([(u, v, 50) for u, v in k3.edges])
    assert algebraic_connectivity(busy) == pytest.approx(50 * algebraic_connectivity(k3))
    assert algebraic_connectivity_binary(busy) == algebraic_connectivity_binary(k3) == (
        pytest.approx(3.0))
    assert algebraic_connectivity_binary(star()) == pytest.approx(1.0)
    assert algebraic_connectivity_binary(disconnected()) == 0.0
