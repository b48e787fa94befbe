"""Commands typed by hand: try a model, print its circuits, check a config. No rule runs
them, so they take their arguments by position, as the README shows them."""
from __future__ import annotations

from pathlib import Path

from .commands import Option, command


def project_dir() -> Path:
    """The workflow's folder (where the Snakefile is): the source tree this package is in."""
    return Path(__file__).resolve().parents[3]


@command("complete", "greedy completion of your own prompts",
         model=Option("a model.pt", positional=True),
         prompts=Option("letters, e.g. ABCDEFABCDEF", type=str, many=True, positional=True))
def complete(model, prompts):
    from .behaviour.behaviour import expected_completion
    from ..core.decoding import greedy_complete
    from ..core.data import check_prompt, decode
    from ..core.loading import load_model

    loaded, spec = load_model(model)
    task = spec.task
    checked = [(p, check_prompt(p, task)) for p in prompts]  # all checked before running
    for prompt, ids in checked:
        completion = decode(greedy_complete(loaded, ids[None], task.seq_len)[0, len(prompt):])
        # the write-up's task determines a completion; another task's may be ambiguous
        expected = expected_completion(prompt, task) if task.kind == "repeated_block" else None
        line = f"{prompt.upper()} -> {completion}"
        if task.kind != "repeated_block":
            line += f"   (task {spec.task_name}, {task.kind}: not scored)"
        elif expected is not None:
            correct = sum(a == b for a, b in zip(completion, expected))
            line += f"   (expected {expected}: {correct}/{len(expected)} correct)"
        else:
            line += "   (out of distribution: no correct completion)"
        print(line)


@command("circuits", "print the OV / direct-path / composition table of one model",
         weights=Option("a weights.npz", positional=True))
def circuits(weights):
    from .circuits.circuits import format_circuits_report
    from ..core.weights import load_weights

    print(format_circuits_report(*load_weights(weights)), end="")


@command("check-config", "the workflow's config check of config.yaml here and FILEs over it, "
         "as `snakemake --configfile FILE...` would run it, and the claims files' check",
         files=Option("config files applied in turn over ./config.yaml (if any)", many=True,
                      required=False, positional=True),
         workflow=Option("the workflow's folder (default: the source tree of this package)",
                         required=False),
         replace_workflow_config=Option("as snakemake --replace-workflow-config: the FILEs "
                                        "replace ./config.yaml instead of going over it",
                                        flag=True, required=False))
def check_config(files, workflow=None, replace_workflow_config=False):
    from .. import experiments
    from ..config import ConfigError, check_workflow_config, overlay, read_yaml
    from ..workflow_checks import missing_config_file, model_count_words, workflow_models

    workflow_dir = workflow or project_dir()
    if not (workflow_dir / "Snakefile").is_file():
        raise ConfigError(f"{workflow_dir}: no Snakefile there; give the workflow's folder with --workflow")
    # As `snakemake --configfile FILE...` here: the Snakefile's config.yaml (read from the
    # working directory, when there is one), then each FILE over it in turn.
    given = list(files or [])
    replace = bool(replace_workflow_config and given)
    found = ([Path("config.yaml")] if Path("config.yaml").is_file() and not replace else []) + given
    config = {}
    for p in found:
        overlay(config, read_yaml(p))
    missing = missing_config_file(Path.cwd(), given, config, how="or give a full config as FILE")
    if missing or (replace and "variants" not in config):
        raise ConfigError(missing or f"{', '.join(map(str, given))}: no variants, and "
                          "--replace-workflow-config takes the FILEs alone; give a full config")
    extras = check_workflow_config(config, workflow_dir, experiments.available(load=False))
    # the claims of the workflow and of the experiments switched on: every table and
    # column they read is one a stage writes
    from ..claims.rules import load_claims

    claims = load_claims(workflow_dir / "workflow" / "claims.yaml",
                         experiments.claims_files(extras))
    # the Snakefile read as snakemake reads it: what it checks while reading its rules
    # (every model registered, ...), and every model it trains
    models = workflow_models(workflow_dir, given, replace=replace)
    names = ", ".join(str(f) for f in given) or "config.yaml"
    print(f"{names}: valid; {model_count_words(config['variants'], models, config['seeds'])}; "
          f"experiments and extra rules: "
          f"{', '.join(Path(e).parent.name if Path(e).name == 'rules.smk' else Path(e).stem for e in extras) or 'none'}"
          f"; {len(claims)} claims")
    from ..config import CONFIG_NOTES

    for name, settings in config["experiments"].items():
        if name in CONFIG_NOTES:
            for line in CONFIG_NOTES[name](settings, config):
                print(f"{name}: {line}")
