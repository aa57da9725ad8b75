"""Structure of an episode's graphs: who messaged whom, and who depended on whom.

A communication graph is a ``networkx.DiGraph`` whose edge ``weight`` is the number of
messages delivered from sender to receiver (a missing weight counts as 1); a
dependency graph's edge ``A -> B`` says B acted on A's order or deferred to A's claim
(:func:`hierarchy_depth`). Self-loops and edges of weight <= 0 are ignored everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx
import numpy as np


def _edges(g: nx.DiGraph) -> list[tuple[str, str, float]]:
    return [
        (u, v, float(d.get("weight", 1)))
        for u, v, d in g.edges(data=True)
        if u != v and float(d.get("weight", 1)) > 0
    ]


def undirected_weighted(g: nx.DiGraph) -> nx.Graph:
    """Undirected version: ``w(u, v) = w(u -> v) + w(v -> u)``, every node kept."""
    h = nx.Graph()
    h.add_nodes_from(g.nodes)
    for u, v, w in _edges(g):
        prior = h[u][v]["weight"] if h.has_edge(u, v) else 0.0
        h.add_edge(u, v, weight=prior + w)
    return h


def hierarchy_depth(dependencies: nx.DiGraph) -> int:
    """The self-organizing paper's hierarchy depth: the longest chain of dependencies,
    in edges, of a dependency graph (``A -> B``: B's choice depended on A's, see
    :func:`~orgteams.organizations.metrics.episode_metrics.dependency_graph`).

    Nobody depending on anybody gives 0, a leader whose orders its members carry out
    1, a leader ordering vice leaders who order their members 2. Agents that depended
    on each other (A on B in one round, B on A in another: a cycle) are peers, one
    level: the chain is measured on the graph's condensation (each strongly connected
    group one node). Self-loops and edges of weight <= 0 are ignored.
    """
    d = nx.DiGraph()
    d.add_nodes_from(dependencies.nodes)
    d.add_edges_from((u, v) for u, v, _ in _edges(dependencies))
    if d.number_of_edges() == 0:
        return 0
    return int(nx.dag_longest_path_length(nx.condensation(d)))


def message_reach_depth(g: nx.DiGraph, roots: Iterable[str] | None = None) -> int:
    """How far the top leader's word travels in the *message* graph: hops (along
    directed who-messages-whom edges, shortest way) to the farthest agent it reaches at
    all. Any broadcast makes it 1, so it is not the paper's hierarchy depth (that is
    :func:`hierarchy_depth`, on the dependency graph); it was called that before #27.

    The episode summary passes the organization's top tier (the primary leader, not
    vice leaders: rooting at every leader would flatten a pyramid to depth 1).

    Depth is the largest number of hops (along directed edges) from the nearest root to
    any node reachable from the roots. Roots default to the single node with the
    largest weighted out-degree (ties: fewest incoming messages, then node order), so a
    star from its centre has depth 1, a one-way chain a->b->c has depth 2, a graph with
    no messages has depth 0. Pass the organization's leaders as ``roots`` to measure the
    designed hierarchy instead.

    Raises:
        ValueError: A root is not a node of ``g``.
    """
    d = nx.DiGraph()
    d.add_nodes_from(g.nodes)
    d.add_weighted_edges_from(_edges(g))
    if d.number_of_edges() == 0:
        return 0
    if roots is None:
        nodes = list(d.nodes)
        out = d.out_degree(weight="weight")
        inn = d.in_degree(weight="weight")
        roots = [min(nodes, key=lambda n: (-out[n], inn[n], nodes.index(n)))]
    roots = list(roots)
    missing = [r for r in roots if r not in d]
    if missing:
        raise ValueError(f"message_reach_depth(): roots not in the graph: {missing}")
    if not roots:
        return 0
    depth = dict.fromkeys(roots, 0)
    frontier = list(roots)
    while frontier:
        nxt = []
        for u in frontier:
            for v in d.successors(u):
                if v not in depth:
                    depth[v] = depth[u] + 1
                    nxt.append(v)
        frontier = nxt
    return max(depth.values())


def _weights(h: nx.Graph) -> np.ndarray:
    """The symmetric weighted adjacency matrix of ``h`` in node order."""
    index = {n: i for i, n in enumerate(h.nodes)}
    a = np.zeros((len(index), len(index)))
    for u, v, d in h.edges(data=True):
        a[index[u], index[v]] = a[index[v], index[u]] = float(d.get("weight", 1))
    return a


LAMBDA_DIGITS = 9
"""Significant digits kept of an eigenvalue: LAPACK builds (numpy's wheels of different
versions) differ in the last digits (202.413250778624 against ...625 for one episode at
12 decimals), and a log must be the same bytes for the same seed wherever it is played."""


def _lambda2(lap: np.ndarray) -> float:
    return float(f"{np.sort(np.linalg.eigvalsh(lap))[1]:.{LAMBDA_DIGITS}g}")


def spectral_gap(g: nx.DiGraph) -> float:
    """Algebraic connectivity lambda_2 of the normalized Laplacian of the undirected
    weighted graph (:func:`undirected_weighted`): ``L = I - D^-1/2 A D^-1/2``.

    0.0 for graphs with fewer than 2 nodes and for disconnected graphs (isolated agents
    included). Star K1,3 and path P3 give 1.0, the triangle K3 gives 1.5. Computed with
    numpy alone (networkx's Laplacian matrices need scipy, an optional extra).
    """
    h = undirected_weighted(g)
    if h.number_of_nodes() < 2 or not nx.is_connected(h):
        return 0.0
    a = _weights(h)
    inv_sqrt = 1.0 / np.sqrt(a.sum(axis=1))  # connected: every degree is > 0
    return _lambda2(np.eye(len(a)) - inv_sqrt[:, None] * a * inv_sqrt[None, :])


def algebraic_connectivity(g: nx.DiGraph) -> float:
    """Lambda_2 of the weighted combinatorial Laplacian ``L = D - A`` of the undirected
    weighted graph (:func:`undirected_weighted`), as DESIGN.md defines the metric.

    0.0 for graphs with fewer than 2 nodes and for disconnected graphs. Unit weights:
    one-way path P3 and star K1,3 give 1.0,
    the triangle K3 gives 3.0 (6.0 when every pair messages both ways); it grows with message
    counts (doubling every weight doubles it), unlike :func:`spectral_gap`, so it
    grows with episode length; divided by the episode's ticks it is the per-tick value
    (``EpisodeMetrics.algebraic_connectivity_per_tick``), and
    :func:`algebraic_connectivity_binary` drops the weights.
    """
    h = undirected_weighted(g)
    if h.number_of_nodes() < 2 or not nx.is_connected(h):
        return 0.0
    a = _weights(h)
    return _lambda2(np.diag(a.sum(axis=1)) - a)


def algebraic_connectivity_binary(g: nx.DiGraph) -> float:
    """Lambda_2 of the *unweighted* combinatorial Laplacian: an edge wherever a message
    went either way, however many (:func:`algebraic_connectivity` with every weight 1).

    It reads the graph's structure alone, so it does not grow with episode length (the
    weighted value does): a star K1,3 and the path P3 give 1.0, the triangle K3 3.0
    (whatever the counts), the complete graph K_n gives n. 0.0 for fewer than 2 nodes
    or a disconnected graph.
    """
    h = undirected_weighted(g)
    if h.number_of_nodes() < 2 or not nx.is_connected(h):
        return 0.0
    a = (_weights(h) > 0).astype(float)
    return _lambda2(np.diag(a.sum(axis=1)) - a)


def centralization(g: nx.DiGraph) -> float:
    """Freeman degree centralization of the undirected, unweighted graph, in [0, 1].

    ``sum(max_degree - degree_i) / ((n - 1) * (n - 2))``: 1.0 for a star, 0.0 for a
    complete graph, an empty graph, or fewer than 3 nodes.
    """
    h = nx.Graph()
    h.add_nodes_from(g.nodes)
    h.add_edges_from((u, v) for u, v, _ in _edges(g))
    n = h.number_of_nodes()
    if n < 3:
        return 0.0
    deg = [d for _, d in h.degree()]
    return sum(max(deg) - d for d in deg) / ((n - 1) * (n - 2))
