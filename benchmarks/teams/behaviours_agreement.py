"""Agreement of the behaviour classifiers with the hand-labelled sample.

    python benchmarks/teams/behaviours_agreement.py              # rule-based only
    python benchmarks/teams/behaviours_agreement.py --llm local  # and the embedded model

Prints accuracy, Cohen's kappa, fallbacks and a confusion table (truth -> predicted) of
each classifier on ``assets/behaviours/labelled.yaml``, side by side in one run, overall
and per source backend of the messages (planner vs model teams). ``--out`` also saves
every prediction. A progress bar on stderr counts the LLM's messages.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from orgteams.cli.progress import Progress
from orgteams.experiments.behaviours import LLMClassifier, agreement, classify_rule, load_labelled

# harness.py is shared by every folder's scripts: benchmarks/, one folder up, goes on the path.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import parser  # noqa: E402


def _report(items: list[dict], predicted: list[str | None]) -> dict:
    truth = [i["label"] for i in items]
    out = {**agreement(truth, predicted),
           "confusion": dict(Counter(f"{t} -> {p}" for t, p in zip(truth, predicted,
                                                                   strict=True)))}
    for backend in sorted({str(i.get("backend")) for i in items}):
        idx = [k for k, i in enumerate(items) if str(i.get("backend")) == backend]
        out[f"messages_from_{backend}"] = agreement([truth[k] for k in idx],
                                                    [predicted[k] for k in idx])
    return out


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--llm", default=None, help="backend spec of the LLM classifier")
    options.add_argument("--limit", type=int, default=None, help="first N messages only")
    options.add_argument("--out", default=None, help="save every prediction to this JSON file")
    args = options.parse_args()
    items = load_labelled()[: args.limit]
    print(f"sample: {len(items)} messages, labels {dict(Counter(i['label'] for i in items))}")
    rule = [classify_rule(i["message"]) for i in items]
    results = {"rule": _report(items, rule)}
    predictions = {"rule": rule}
    if args.llm:
        from orgteams.experiments.reflect import make_llm

        with make_llm(args.llm) as backend:  # a local backend stops its own server
            classifier = LLMClassifier(backend)
            bar = Progress(len(items), f"classifying with {args.llm}")
            predicted: list[str | None] = []
            started = time.monotonic()
            for i, item in enumerate(items):
                predicted.append(classifier.classify(item["message"]))
                bar.update(i + 1)
            bar.close()
        results[f"llm:{args.llm}"] = {
            **_report(items, predicted), "seconds": round(time.monotonic() - started, 1),
            "fallback_reasons": sorted({r for _, r in classifier.fallbacks})}
        predictions[f"llm:{args.llm}"] = predicted
    print(json.dumps(results, indent=2, default=int))
    if args.out:
        Path(args.out).write_text(json.dumps(
            [{"message": i["message"], "label": i["label"],
              **{name: p[k] for name, p in predictions.items()}}
             for k, i in enumerate(items)], indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
