"""orgteams report: exact statistics on a hand-built results file, labels, plots, CLI."""

from __future__ import annotations

import json
import math

import pytest

from orgteams.cli.main import main

stats = pytest.importorskip("scipy.stats")
pytest.importorskip("matplotlib")

from orgteams.experiments.report import report  # noqa: E402

# organization -> [(success, ticks, rounds, comm_tokens_per_step)]
EPISODES = {
    "none": [(True, 40, 12, 8.0), (True, 52, 15, 9.5), (False, 90, 30, 11.0), (True, 47, 14, 7.5)],
    "leader": [(True, 30, 10, 5.0), (True, 35, 11, 6.5), (True, 33, 10, 5.5),
               (False, 80, 25, 4.0), (True, 31, 9, 6.0)],
    "chain": [(True, 60, 20, 3.0), (True, 58, 19, 3.5), (True, 66, 22, 2.5)],
}


def write_results(path, episodes=EPISODES, task="put_fridge", truncated=True):
    lines = []
    for org, eps in episodes.items():
        for seed, (ok, ticks, rounds, cps) in enumerate(eps):
            cell = {"task": task, "layout": "studio", "organization": org, "agents": 3,
                    "backend": "planner", "seed": seed}
            key = "|".join(str(cell[k]) for k in ("task", "layout", "organization", "agents",
                                                  "backend", "seed"))
            lines.append(json.dumps({"key": key, "cell": cell, "status": "ok", "error": None,
                                     "summary": {"success": ok, "ticks": ticks,
                                                 "rounds": rounds,
                                                 "comm_tokens_per_step": cps}}))
    # A failed cell (not in the statistics, counted as an error) and a crash mid-write.
    cell = {"task": task, "layout": "studio", "organization": "leader", "agents": 3,
            "backend": "planner", "seed": 99}
    lines.append(json.dumps({"key": "x", "cell": cell, "status": "error", "summary": None,
                             "error": "RuntimeError: boom"}))
    text = "\n".join(lines) + "\n"
    if truncated:
        text += '{"key": "put_fridge|studio|none|3|planner|7", "cell": {"ta'
    path.write_text(text)
    return path


def expected(values):
    n = len(values)
    mean = sum(values) / n
    sd = stats.tstd(values)  # ddof=1
    lo, hi = stats.t.interval(0.95, n - 1, loc=mean, scale=stats.sem(values))
    return mean, sd, lo, hi


def group(rep, org):
    return next(g for g in rep["groups"] if g["organization"] == org)


def test_numbers_match_scipy(tmp_path):
    rep = report(write_results(tmp_path / "results.jsonl"), tmp_path / "rep")
    assert rep["unreadable_lines"] == 1 and rep["error_cells"] == 1
    for org, eps in EPISODES.items():
        g = group(rep, org)
        wins = [e for e in eps if e[0]]
        assert g["n"] == len(eps) and g["successes"] == len(wins)
        assert g["success_rate"] == pytest.approx(len(wins) / len(eps))
        assert g["errors"] == (1 if org == "leader" else 0)
        for i, m in ((1, "ticks"), (2, "rounds"), (3, "comm_tokens_per_step")):
            for over, subset in (("all_episodes", eps), ("successful_episodes", wins)):
                mean, sd, lo, hi = expected([float(e[i]) for e in subset])
                got = g["metrics"][m][over]
                assert got["n"] == len(subset)
                assert got["mean"] == pytest.approx(mean, rel=1e-12)
                assert got["sd"] == pytest.approx(sd, rel=1e-12)
                assert got["ci95"] == pytest.approx([lo, hi], rel=1e-12)
    # Baseline defaults to ``none``; Welch's t-test over all episodes.
    assert group(rep, "none")["welch_vs_baseline"] is None
    for org in ("leader", "chain"):
        w = group(rep, org)["welch_vs_baseline"]
        assert w["baseline"] == "none" and w["over"] == "all_episodes"
        for i, m in ((1, "ticks"), (3, "comm_tokens_per_step")):
            ref = stats.ttest_ind([e[i] for e in EPISODES[org]], [e[i] for e in EPISODES["none"]],
                                  equal_var=False)
            assert w[m]["t"] == pytest.approx(ref.statistic, rel=1e-12)
            assert w[m]["p"] == pytest.approx(ref.pvalue, rel=1e-12)


def test_success_only_averages_are_labelled_and_files_written(tmp_path):
    out = tmp_path / "rep"
    rep = report(write_results(tmp_path / "results.jsonl"), out)
    md = (out / "report.md").read_text()
    assert "### All episodes" in md and "### Successful episodes only" in md
    assert "Baseline: `none`" in md and "Welch" in md
    mean, sd, lo, hi = expected([40.0, 52.0, 47.0])  # none, successful episodes only
    assert f"{mean:.2f} ± {sd:.2f} [{lo:.2f}, {hi:.2f}]" in md
    on_disk = json.loads((out / "report.json").read_text())
    assert on_disk["groups"] == json.loads(json.dumps(rep["groups"]))
    plots = rep["files"]["plots"]
    names = {p.rsplit("/", 1)[-1] for p in plots}
    assert names == {"put_fridge_studio_a3_planner_ticks.png",
                     "put_fridge_studio_a3_planner_comm_tokens_per_step.png",
                     "put_fridge_studio_a3_planner_scatter.png"}
    for p in plots:
        data = open(p, "rb").read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_explicit_baseline_and_first_org_fallback(tmp_path):
    rep = report(write_results(tmp_path / "r.jsonl"), tmp_path / "a", baseline="chain")
    assert group(rep, "chain")["welch_vs_baseline"] is None
    assert group(rep, "none")["welch_vs_baseline"]["baseline"] == "chain"
    no_none = {k: v for k, v in EPISODES.items() if k != "none"}
    rep = report(write_results(tmp_path / "s.jsonl", no_none, truncated=False), tmp_path / "b")
    assert group(rep, "leader")["welch_vs_baseline"] is None  # the first organization
    assert group(rep, "chain")["welch_vs_baseline"]["baseline"] == "leader"
    with pytest.raises(ValueError, match="baseline organization 'boss'"):
        report(tmp_path / "s.jsonl", tmp_path / "c", baseline="boss")


def test_small_groups_have_no_sd_ci_or_test(tmp_path):
    eps = {"none": [(True, 10, 3, 1.0)], "leader": [(False, 20, 5, 2.0), (False, 30, 6, 4.0)]}
    rep = report(write_results(tmp_path / "r.jsonl", eps, truncated=False), tmp_path / "o")
    one = group(rep, "none")["metrics"]["ticks"]["all_episodes"]
    assert one == {"n": 1, "mean": 10.0, "sd": None, "ci95": None}
    lead = group(rep, "leader")
    assert lead["metrics"]["ticks"]["successful_episodes"]["n"] == 0
    assert lead["welch_vs_baseline"]["ticks"]["t"] is None
    assert not math.isnan(lead["metrics"]["ticks"]["all_episodes"]["sd"])


def test_cli_report_json(tmp_path, capsys):
    res = write_results(tmp_path / "results.jsonl")
    assert main(["report", str(res), "--out", str(tmp_path / "rep"), "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    data = json.loads(out[0])
    assert {g["organization"] for g in data["groups"]} == {"none", "leader", "chain"}
    assert (tmp_path / "rep" / "report.md").exists()
    assert main(["report", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)]) == 2
    assert "results file not found" in capsys.readouterr().err


def test_sweep_then_report_end_to_end(tmp_path, capsys):
    assert main(["sweep", "--layouts", "studio", "--orgs", "none,leader", "--agents", "3",
                 "--backend", "planner", "--seeds", "3", "--out", str(tmp_path),
                 "--workers", "2", "--quiet", "--json"]) == 0
    capsys.readouterr()
    rep = report(tmp_path / "results.jsonl", tmp_path / "report")
    assert [g["n"] for g in rep["groups"]] == [3, 3]
    assert group(rep, "leader")["welch_vs_baseline"]["baseline"] == "none"


def test_cohens_d_and_kruskal_wallis_match_their_definitions(tmp_path):
    rep = report(write_results(tmp_path / "results.jsonl"), tmp_path / "rep", plots=False)
    base = EPISODES["none"]
    for org in ("leader", "chain"):
        for i, m in ((1, "ticks"), (3, "comm_tokens_per_step")):
            a, b = [float(e[i]) for e in EPISODES[org]], [float(e[i]) for e in base]
            pooled = math.sqrt(((len(a) - 1) * stats.tvar(a) + (len(b) - 1) * stats.tvar(b))
                               / (len(a) + len(b) - 2))
            d = (sum(a) / len(a) - sum(b) / len(b)) / pooled
            assert group(rep, org)["welch_vs_baseline"][m]["d"] == pytest.approx(d, rel=1e-12)
    for i, m in ((1, "ticks"), (3, "comm_tokens_per_step")):
        ref = stats.kruskal(*[[e[i] for e in eps] for eps in EPISODES.values()])
        kw = group(rep, "leader")["kruskal_across_organizations"][m]
        assert (kw["H"], kw["p"], kw["k"]) == (pytest.approx(ref.statistic, rel=1e-12),
                                               pytest.approx(ref.pvalue, rel=1e-12), 3)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Cohen's d" in md and "Kruskal-Wallis across organizations: ticks H" in md
    assert "Tokenizer: not recorded." in md


def test_role_stability_index_across_episodes_and_the_tokenizer_are_reported(tmp_path):
    rows = []
    # agent_0 keeps "cook" in all 3 episodes; agent_1 switches scout -> cook -> cook
    roles = [{"agent_0": "cook", "agent_1": "scout"}, {"agent_0": "cook", "agent_1": "cook"},
             {"agent_0": "Cook", "agent_1": "cook"}]
    for seed, r in enumerate(roles):
        cell = {"task": "t", "layout": "studio", "organization": "dynamic", "agents": 2,
                "backend": "planner", "seed": seed}
        rows.append(json.dumps({"key": str(seed), "cell": cell, "status": "ok", "summary": {
            "success": True, "ticks": 10 + seed, "rounds": 3, "comm_tokens_per_step": 1.0,
            "seed": seed, "tokenizer": "smollm2-135m-bpe",
            "roles_by_round": {"0": r, "1": r}}}))
    (tmp_path / "results.jsonl").write_text("\n".join(rows) + "\n")
    rep = report(tmp_path / "results.jsonl", tmp_path / "rep", plots=False)
    g = rep["groups"][0]
    assert g["rsi"] == pytest.approx((1.0 + 0.5) / 2)
    assert g["tokenizers"] == ["smollm2-135m-bpe"]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Tokenizer: `smollm2-135m-bpe`." in md and "| 0.75 |" in md
def test_stopped_episodes_are_listed_not_averaged(tmp_path):
    path = tmp_path / "results.jsonl"
    write_results(path, truncated=False)
    cell = {"task": "put_fridge", "layout": "studio", "organization": "none", "agents": 3,
            "backend": "planner", "seed": 7}
    key = "put_fridge|studio|none|3|planner|7"
    stopped = {"success": False, "ticks": 1, "rounds": 1, "comm_tokens_per_step": 0.0,
               "episode_status": "error", "stop_reason": "transport failures",
               "stop_detail": "server gone"}
    with path.open("a") as fh:
        # an "ok" row whose episode did not really play (written by older code) and the
        # sweep's own error row for another cell: neither enters any mean
        fh.write(json.dumps({"key": key, "cell": cell, "status": "ok", "error": None,
                             "summary": stopped}) + "\n")
        fh.write(json.dumps({"key": key.replace("|7", "|8"), "cell": {**cell, "seed": 8},
                             "status": "error", "error": "episode error: server gone",
                             "summary": stopped}) + "\n")
    out = report(path, tmp_path / "rep", plots=False)
    none = next(g for g in out["groups"] if g["organization"] == "none")
    assert none["n"] == len(EPISODES["none"]) and none["errors"] == 2
    ticks = [t for _, t, _, _ in EPISODES["none"]]
    assert none["metrics"]["ticks"]["all_episodes"]["mean"] == pytest.approx(
        sum(ticks) / len(ticks))
    assert [(f["key"], f["status"], f["episode_status"]) for f in out["failed"]][-2:] == [
        (key, "ok", "error"), (key.replace("|7", "|8"), "error", "error")]
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Cells left out (did not play to the end)" in md
    assert (f"| `{key.replace('|7', '|8')}` | error | error | transport failures | "
            "episode error: server gone |") in md
    assert [f["stop_reason"] for f in out["failed"]][-2:] == ["transport failures"] * 2


def test_recovery_none_is_counted_as_not_recovered_never_averaged_as_zero(tmp_path):
    recoveries = {"leader": [2, None, 4, None], "none": [None, None]}
    lines = []
    for org, values in recoveries.items():
        for seed, rec in enumerate(values):
            cell = {"task": "put_fridge", "layout": "studio", "organization": org,
                    "agents": 3, "backend": "planner", "seed": seed, "shocks": "remove",
                    "shock_list": ["remove:agent_1@5"]}
            shock = {"round": 5, "kind": "remove", "agent": "agent_1", "applied": True,
                     "pre_shock_rate": 0.5, "recovery_rounds": rec,
                     "recovery_ticks": None if rec is None else 10 * rec}
            lines.append(json.dumps({"key": f"{org}{seed}", "cell": cell, "status": "ok",
                                     "error": None, "summary": {
                                         "success": rec is not None, "ticks": 50 + seed,
                                         "rounds": 10, "comm_tokens_per_step": 1.0 + seed / 10,
                                         "shocks": [shock], "successions": [
                                             {"successor": "agent_2"}] if org == "leader"
                                         else []}}))
    results = tmp_path / "results.jsonl"
    results.write_text("\n".join(lines) + "\n")
    rep = report(results, tmp_path / "rep", plots=False)
    leader, none = group(rep, "leader"), group(rep, "none")
    assert leader["shocks"] == "remove"
    rec = leader["recovery"]
    assert (rec["applied"], rec["recovered"], rec["not_recovered"]) == (4, 2, 2)
    assert rec["recovery_rounds"]["mean"] == 3.0  # (2 + 4) / 2, not (2 + 0 + 4 + 0) / 4
    assert none["recovery"]["recovery_rounds"]["mean"] is None
    assert none["recovery"]["not_recovered"] == 2
    assert (rec["successions"], none["recovery"]["successions"]) == (4, 0)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert rec["recovery_ticks"]["mean"] == 30.0 and rec["no_baseline"] == 0
    assert "shocks remove" in md and "| leader | 4 | 2 | 2 | 0 | 4 | 3.00 ± 1.41" in md
    assert "| none | 2 | 0 | 2 | 0 | 0 | - | - |" in md


def test_label_shares_per_organization_from_the_episode_logs(tmp_path, capsys):
    """Paper 1 section 4.3 in the report: each organization's shares of the rule-based
    labels of every message its episodes sent, overall and per role (a planner's kind
    decides its label: a claim is its own plan); a missing log is counted, a log moved
    with its sweep folder is found in ``logs/``."""
    sent = {"leader": [[("leader", "assign", "Bob: explore kitchen"),
                        ("member", "found", "seen wine_1 in sofa")],
                       [("member", "claim", "claim wine_2 -> coffee_table"),
                        ("member", "text", "what should I do?")]],
            "none": [[("member", "done", "done apple_1 -> coffee_table")], None]}
    (tmp_path / "logs").mkdir()
    rows = []
    for org, episodes in sent.items():
        for seed, messages in enumerate(episodes):
            cell = {"task": "t", "layout": "studio", "organization": org, "agents": 2,
                    "backend": "planner", "seed": seed}
            log = tmp_path / "logs" / f"{org}_{seed}.jsonl"
            if messages is not None:
                log.write_text("".join(json.dumps(
                    {"round": 0, "agent": "agent_0", "phase": "communicate", "role": role,
                     "message": text, "message_kind": kind}) + "\n"
                    for role, kind, text in messages) + '{"record": "episode"}\n')
            # the leader's first log is named by a path that no longer exists
            where = f"/moved/away/{log.name}" if (org, seed) == ("leader", 0) else str(log)
            rows.append(json.dumps({"key": f"{org}{seed}", "cell": cell, "status": "ok",
                                    "summary": {"success": True, "ticks": 10 + seed,
                                                "rounds": 3 + seed,
                                                "comm_tokens_per_step": 1.0 + seed
                                                + len(org), "log_path": where}}))
    (tmp_path / "results.jsonl").write_text("\n".join(rows) + "\n")
    assert main(["report", str(tmp_path / "results.jsonl"), "--out", str(tmp_path / "rep")]) == 0
    assert "report " in capsys.readouterr().err  # the progress bar, on stderr
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    leader, none = group(rep, "leader")["behaviours"], group(rep, "none")["behaviours"]
    assert leader == {"n": 4, "episodes": 2, "missing_logs": 0, "shares": {
        "information_sharing": 0.5, "leadership_assistance": 0.25,
        "request_for_guidance": 0.25, "other": 0.0}, "by_role": {
        "leader": {"n": 1, "shares": {"information_sharing": 0.0, "leadership_assistance": 1.0,
                                      "request_for_guidance": 0.0, "other": 0.0}},
        "member": {"n": 3, "shares": {
            "information_sharing": pytest.approx(2 / 3), "leadership_assistance": 0.0,
            "request_for_guidance": pytest.approx(1 / 3), "other": 0.0}}}}
    assert none == {"n": 1, "episodes": 1, "missing_logs": 1, "shares": {
        "information_sharing": 1.0, "leadership_assistance": 0.0,
        "request_for_guidance": 0.0, "other": 0.0}, "by_role": {"member": {"n": 1, "shares": {
            "information_sharing": 1.0, "leadership_assistance": 0.0,
            "request_for_guidance": 0.0, "other": 0.0}}}}
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "### Cooperative behaviours (shares of rule-based message labels)" in md
    assert "| leader | 2 | 4 | 0.50 | 0.25 | 0.25 | 0.00 |" in md
    assert "| none | 1 | 1 | 1.00 | 0.00 | 0.00 | 0.00 |" in md
    assert "| leader | leader | 1 | 0.00 | 1.00 | 0.00 | 0.00 |" in md
    assert "| leader | member | 3 | 0.67 | 0.00 | 0.33 | 0.00 |" in md


def test_leader_tenure_and_self_vote_rate_group_means(tmp_path):
    rows = []
    for seed, (tenure, self_votes) in enumerate([(10.0, 0.25), (5.0, None), (6.0, 0.5)]):
        cell = {"task": "t", "layout": "studio", "organization": "elected_leader", "agents": 4,
                "backend": "planner", "seed": seed}
        rows.append(json.dumps({"key": str(seed), "cell": cell, "status": "ok", "summary": {
            "success": True, "ticks": 20, "rounds": 10, "comm_tokens_per_step": 1.0,
            "leader_tenure": tenure, "self_vote_rate": self_votes}}))
    (tmp_path / "results.jsonl").write_text("\n".join(rows) + "\n")
    rep = report(tmp_path / "results.jsonl", tmp_path / "rep", plots=False)
    g = rep["groups"][0]
    assert g["leader_tenure"] == pytest.approx(7.0)
    assert g["self_vote_rate"] == pytest.approx(0.375)  # over the episodes with ballots
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| RSI | tenure | self-votes |" in md and "| 7.00 | 0.38 |" in md


def test_kruskal_wallis_with_one_episode_per_group_is_no_test(tmp_path):
    """With one seed per organization (or team size) every group is a single value: H is
    then k - 1 whatever the values (5.00, p 0.42 for 6 sizes in paper2-scaling at --seeds
    1), so no H or p may be reported as if it measured a difference."""
    from orgteams.experiments.stats import kruskal

    assert kruskal([[7.0], [5.0], [4.0]]) == {"H": None, "p": None, "k": 3}
    assert kruskal([[70.0], [5.0], [4.0]]) == {"H": None, "p": None, "k": 3}
    two = kruskal([[7.0, 6.0], [5.0], [4.0]])  # one group of two: a test, as scipy's
    ref = stats.kruskal([7.0, 6.0], [5.0], [4.0])
    assert (two["H"], two["p"]) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    one_seed = {org: eps[:1] for org, eps in EPISODES.items()}
    rep = report(write_results(tmp_path / "results.jsonl", one_seed), tmp_path / "rep",
                 plots=False)
    kw = group(rep, "leader")["kruskal_across_organizations"]["ticks"]
    assert (kw["H"], kw["p"], kw["k"]) == (None, None, 3)
    assert ("Kruskal-Wallis across organizations: ticks H -, p - (k = 3); "
            "comm_tokens_per_step H -, p - (k = 3).") in (
        tmp_path / "rep" / "report.md").read_text().splitlines()


@pytest.mark.parametrize(("summary", "message"), [
    ({"success": "yes", "ticks": 40}, "field 'summary.success' must be true or false, got 'yes'"),
    ({"success": True, "ticks": "many"}, "field 'summary.ticks' must be a number, got 'many'"),
    ({"success": True, "ticks": 40, "comm_tokens_per_step": [1]},
     "field 'summary.comm_tokens_per_step' must be a number, got [1]"),
    ({"success": True, "ticks": float("nan")},  # was averaged as "nan ± nan"
     "field 'summary.ticks' must be a finite number of at most 1e+12 in size, got nan"),
    ({"success": True, "ticks": 1e308},  # was an OverflowError traceback in the variance
     "field 'summary.ticks' must be a finite number of at most 1e+12 in size, got 1e+308"),
])
def test_a_summary_field_the_tables_average_must_be_of_its_kind(tmp_path, capsys, summary,
                                                                 message):
    """A hand-edited row's 'success': 'yes' was counted a success and 'ticks': 'many'
    dropped from the mean without a word; now one line naming the file, row and field."""
    cell = {"task": "put_fridge", "layout": "studio", "organization": "leader", "agents": 3,
            "backend": "planner", "seed": 0}
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"key": "k", "cell": cell, "status": "ok", "error": None,
                                "summary": summary}) + "\n")
    assert main(["report", str(path), "--out", str(tmp_path / "rep")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"orgteams report: error: {path}: result row 1: {message}")
    assert not (tmp_path / "rep").exists()


def test_the_successful_episodes_table_has_their_own_tenure_and_self_votes(tmp_path):
    """It showed the group's all-episode tenure and self-votes, even with n = 0."""
    rows = []
    for seed, (ok, tenure, self_votes) in enumerate([(True, 10.0, 0.25), (False, 4.0, 1.0),
                                                     (True, 6.0, 0.5)]):
        for org in ("elected_leader", "leader"):
            cell = {"task": "t", "layout": "studio", "organization": org, "agents": 4,
                    "backend": "planner", "seed": seed}
            won = ok and org == "elected_leader"  # leader: no successful episode
            rows.append(json.dumps({"key": f"{org}{seed}", "cell": cell, "status": "ok",
                                    "summary": {"success": won, "ticks": 20, "rounds": 10,
                                                "comm_tokens_per_step": 1.0,
                                                "leader_tenure": tenure,
                                                "self_vote_rate": self_votes}}))
    (tmp_path / "results.jsonl").write_text("\n".join(rows) + "\n")
    rep = report(tmp_path / "results.jsonl", tmp_path / "rep", plots=False)
    assert group(rep, "elected_leader")["leader_tenure"] == pytest.approx(20 / 3)
    assert group(rep, "elected_leader")["successful_episodes"] == {
        "rsi": None, "leader_tenure": pytest.approx(8.0), "self_vote_rate": pytest.approx(0.375)}
    assert group(rep, "leader")["successful_episodes"] == {
        "rsi": None, "leader_tenure": None, "self_vote_rate": None}
    md = (tmp_path / "rep" / "report.md").read_text()
    every, wins = (md.split("### Successful episodes only")[i] for i in (0, 1))
    assert "| elected_leader | 3 | 0 | 0.67 |" in every and "| - | 6.67 | 0.58 |" in every
    assert "| elected_leader | 2 | 0 | 0.67 |" in wins and "| - | 8.00 | 0.38 |" in wins
    assert "| leader | 0 | 0 | 0.00 | - | - | - | - | - | - | - |" in wins
