# Helpers shared by every stage: the list of models and their result folders.
import json
import os
import shlex

from inductionlab.spec import make_spec

VARIANTS = list(config["variants"])
SEEDS = [int(s) for s in config["seeds"]]
RESULTS = "results"


wildcard_constraints:
    variant="|".join(VARIANTS),
    seed=r"\d+",


def model_file(name):
    """Path pattern of ``name`` in a model's result folder (wildcards variant, seed)."""
    return f"{RESULTS}/{{variant}}/seed{{seed}}/{name}"


def per_model(name):
    """``name`` in every (variant, seed) result folder."""
    return expand(model_file(name), variant=VARIANTS, seed=SEEDS)


def all_weights():
    return per_model("weights.npz")


def circuit_outputs():
    return per_model("circuits.csv") + per_model("composition.csv") + per_model("eigenvalues.npz")


def behaviour_outputs():
    files = ["completions.csv", "failure_modes.csv", "attention.npz", "head_scores.csv",
             "behaviour.csv", "figures/attention"]
    return [path for name in files for path in per_model(name)]


def model_spec_json(wildcards):
    """The resolved spec of one model; a params change reruns that model only."""
    return json.dumps(make_spec(config, wildcards.variant, int(wildcards.seed)), sort_keys=True)


def stage_settings_json(wildcards):
    """One config section (plus the task) as JSON; a change reruns only that stage."""
    return json.dumps({**config[wildcards.stage], "task": config["task"]}, sort_keys=True)


def settings_file(stage):
    return f"{RESULTS}/settings/{stage}.json"
