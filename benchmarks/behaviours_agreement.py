"""Agreement of the behaviour classifiers with the hand-labelled sample.

    python benchmarks/behaviours_agreement.py              # rule-based only
    python benchmarks/behaviours_agreement.py --llm local  # and the embedded model

Prints accuracy, Cohen's kappa and fallbacks of each classifier on
``assets/behaviours/labelled.yaml`` (one run, side by side).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from orgteams.behaviours import LLMClassifier, agreement, classify_rule, load_labelled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default=None, help="backend spec of the LLM classifier")
    parser.add_argument("--limit", type=int, default=None, help="first N messages only")
    args = parser.parse_args()
    items = load_labelled()[: args.limit]
    truth = [i["label"] for i in items]
    results = {"rule": agreement(truth, [classify_rule(i["message"]) for i in items])}
    if args.llm:
        from orgteams.reflect import make_llm

        with make_llm(args.llm) as backend:  # a local backend stops its own server
            classifier = LLMClassifier(backend)
            predicted = [classifier.classify(i["message"]) for i in items]
        results[f"llm:{args.llm}"] = {**agreement(truth, predicted),
                                      "predicted": dict(Counter(map(str, predicted))),
                                      "fallback_reasons": sorted({r for _, r in
                                                                  classifier.fallbacks})}
    print(json.dumps(results, indent=2, default=int))


if __name__ == "__main__":
    main()
