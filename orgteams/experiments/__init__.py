"""Experiments: resumable sweeps, paper recipes, reports and statistics, Criticize-
Reflect runs and their held-out evaluation, demonstrations, behaviour labels, and the
cost estimate of a run's model calls.

>>> from orgteams.experiments import run_sweep, run_reflect
"""

from orgteams.lazy import lazy_exports

__all__ = ["SweepSpec", "collect_demos", "evaluate_reflect", "list_experiments", "load_recipe",
           "run_experiment", "run_reflect", "run_sweep"]

# Imported on first use: a sweep needs no report libraries, a report no sweep machinery.
__getattr__, __dir__ = lazy_exports(__name__, {
    "SweepSpec": "orgteams.experiments.sweep",
    "collect_demos": "orgteams.experiments.demos",
    "evaluate_reflect": "orgteams.experiments.reflect_eval",
    "list_experiments": "orgteams.experiments.recipes",
    "load_recipe": "orgteams.experiments.recipes",
    "run_experiment": "orgteams.experiments.recipes",
    "run_reflect": "orgteams.experiments.reflect",
    "run_sweep": "orgteams.experiments.sweep",
})
