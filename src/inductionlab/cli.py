"""Command line: ``inductionlab <command> ...``; the workflow's rules call these."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _cmd_train(args) -> None:
    from .core.spec import read_spec
    from .core.train import train

    train(read_spec(args.spec), args.out_dir, threads=args.threads)


def _cmd_train_stacked(args) -> None:
    from .core.spec import read_spec
    from .core.train import train_stacked

    train_stacked([read_spec(p) for p in args.specs], [p.parent for p in args.specs],
                  threads=args.threads)


def _cmd_extract_weights(args) -> None:
    from .core.loading import load_model
    from .core.weights import save_weights

    model, spec = load_model(args.model)
    save_weights(args.out, model, spec)
    print(f"wrote {args.out}", file=sys.stderr)


def project_dir() -> Path:
    """The workflow's folder (where the Snakefile is): the source tree this package is in."""
    return Path(__file__).resolve().parents[2]


def _cmd_check_config(args) -> None:
    from .config import ConfigError, check_workflow_config, overlay, read_yaml

    workflow_dir = args.workflow or project_dir()
    if not (workflow_dir / "Snakefile").is_file():
        raise ConfigError(f"{workflow_dir}: no Snakefile there; give the workflow's folder with --workflow")
    # As `snakemake --configfile FILE...` here: the Snakefile's config.yaml (read from the
    # working directory, when there is one), then each FILE over it in turn.
    files = ([Path("config.yaml")] if Path("config.yaml").is_file() else []) + list(args.files)
    if not files:
        raise ConfigError("no config.yaml here and no FILE given")
    config = {}
    for path in files:
        overlay(config, read_yaml(path))
    extras = check_workflow_config(config, workflow_dir)
    n = len(config["variants"]) * len(config["seeds"])
    names = ", ".join(str(f) for f in args.files) or "config.yaml"
    print(f"{names}: valid; {len(config['variants'])} variant(s) x {len(config['seeds'])} seed(s) "
          f"= {n} model(s); extra rules: {', '.join(Path(e).stem for e in extras) or 'none'}")


def _cmd_circuits(args) -> None:
    from .analysis.circuits import format_circuits_report
    from .core.weights import load_weights

    print(format_circuits_report(*load_weights(args.weights)), end="")


def _cmd_circuits_tables(args) -> None:
    from .analysis.circuits import write_circuits

    write_circuits(args.weights, args.circuits, args.composition, args.eigenvalues)


def _cmd_behaviour(args) -> None:
    from .analysis.behaviour import write_behaviour

    write_behaviour(args.model, args.settings, args.completions, args.failure_modes,
                    args.attention, args.head_scores, args.summary,
                    log=lambda msg: print(msg, file=sys.stderr, flush=True))


def _cmd_attention_figures(args) -> None:
    from .atomic import atomic_dir
    from .report.attention_plots import write_attention_figures

    with atomic_dir(args.out_dir) as tmp:
        write_attention_figures(args.attention, tmp, title=args.title or _model_title(args.attention))


def _cmd_circuit_figures(args) -> None:
    from .atomic import atomic_dir
    from .report.circuit_plots import write_circuit_figures

    with atomic_dir(args.out_dir) as tmp:
        write_circuit_figures(args.weights, tmp, title=args.title)


def _model_title(path: Path) -> str:
    """'variant seed N' from a results/{variant}/seed{N}/... path, else the file name."""
    parts = Path(path).parts
    if len(parts) >= 3 and parts[-2].startswith("seed"):
        return f"{parts[-3]} {parts[-2].replace('seed', 'seed ')}:"
    return f"{Path(path).name}:"


def _cmd_complete(args) -> None:
    from .analysis.behaviour import check_prompt, expected_completion, greedy_complete
    from .core.data import TaskConfig, decode
    from .core.loading import load_model

    model, spec = load_model(args.model)
    task = TaskConfig.from_dict(spec["task"])
    prompts = [(p, check_prompt(p, task)) for p in args.prompts]  # all checked before running
    for prompt, ids in prompts:
        completion = decode(greedy_complete(model, ids[None], task.seq_len)[0, len(prompt):])
        expected = expected_completion(prompt, task)
        line = f"{prompt.upper()} -> {completion}"
        if expected is not None:
            correct = sum(a == b for a, b in zip(completion, expected))
            line += f"   (expected {expected}: {correct}/{len(expected)} correct)"
        else:
            line += "   (out of distribution: no correct completion)"
        print(line)


def _cmd_dynamics(args) -> None:
    import torch

    from .analysis.dynamics import write_dynamics

    torch.set_num_threads(max(1, args.threads))
    write_dynamics(args.model, args.checkpoints, args.behaviour_settings, args.settings,
                   args.dynamics, args.losses, args.phase_change,
                   log=lambda msg: print(msg, file=sys.stderr, flush=True))


def _cmd_dynamics_figures(args) -> None:
    import json

    from .atomic import atomic_dir
    from .report.dynamics_plots import write_dynamics_figures

    task = json.loads(args.settings.read_text()).get("task") if args.settings else None
    with atomic_dir(args.out_dir) as tmp:
        write_dynamics_figures(args.dynamics, args.phase_change, tmp,
                               title=args.title or _model_title(args.dynamics), task=task)


def _cmd_per_token_loss_pca(args) -> None:
    from .analysis.dynamics import write_per_token_loss_pca
    from .report.dynamics_plots import pca_trajectories
    from .report.plots import save

    frame = write_per_token_loss_pca(args.losses, args.table)
    if args.figure is not None:
        save(pca_trajectories(frame), args.figure)
    print(f"PCA of {len(frame)} checkpoints: explained variance PC1 "
          f"{frame['explained_variance_PC1'].iloc[0]:.3f}, PC2 "
          f"{frame['explained_variance_PC2'].iloc[0]:.3f}", file=sys.stderr)


def _cmd_aggregate(args) -> None:
    from .report.aggregate import aggregate

    aggregate(args.name, args.inputs, args.long, args.summary, final_step=args.final_step)


def _cmd_claims(args) -> None:
    from .report.claims import run_claims
    from .core.loading import read_json

    roles = None
    if args.roles is not None:
        roles = read_json(args.roles, "a behaviour settings JSON")["roles"]
    families = read_json(args.families, "a model families JSON") if args.families else None
    run_claims(args.claims_yaml, args.tables, args.claims, args.scorecard, roles,
               families=families, comparison_csv=args.comparison)


def _cmd_figure(args) -> None:
    from .report.figures import write_figure

    write_figure(args.name, args.variant, args.settings, args.out, args.inputs)


def _cmd_report(args) -> None:
    from .report.render import write_report

    write_report(args.manifest, args.html, args.pdf,
                 log=lambda msg: print(msg, file=sys.stderr, flush=True))


def _cmd_ablations(args) -> None:
    import torch

    from .analysis.ablations import write_ablations

    torch.set_num_threads(max(1, args.threads))
    write_ablations(args.model, args.behaviour_settings, args.settings, args.table, args.attention,
                    log=lambda msg: print(msg, file=sys.stderr, flush=True))


def _cmd_positional_shortcut(args) -> None:
    import torch

    from .analysis.positional_shortcut import write_shortcut

    torch.set_num_threads(max(1, args.threads))
    write_shortcut(args.model, args.settings, args.metrics, args.offsets, args.completions,
                   args.positions, log=lambda msg: print(msg, file=sys.stderr, flush=True))


def _cmd_positional_shortcut_figures(args) -> None:
    from .report.shortcut_plots import write_figures

    write_figures(args.offsets, args.positions, args.settings, args.offsets_figure,
                  args.positions_figure)


def _cmd_write_json(args) -> None:
    import json

    from .atomic import write_text

    try:
        document = json.loads(args.document)
    except json.JSONDecodeError as err:
        raise ValueError(f"{args.out}: the document is not JSON ({err})") from None
    write_text(args.out, json.dumps(document, indent=args.indent, sort_keys=args.sort_keys) + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inductionlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train one model from its spec.json")
    p.add_argument("spec", type=Path, help="spec.json written by the workflow")
    p.add_argument("out_dir", type=Path, help="folder for model.pt, train_log.csv, checkpoints/")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("train-stacked", help="train several seeds of one spec as one stacked model")
    p.add_argument("specs", type=Path, nargs="+",
                   help="spec.json files differing only in their seed; each model's outputs "
                   "go to its spec's folder")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=_cmd_train_stacked)

    p = sub.add_parser("extract-weights", help="write weights.npz from model.pt")
    p.add_argument("model", type=Path)
    p.add_argument("out", type=Path)
    p.set_defaults(func=_cmd_extract_weights)

    p = sub.add_parser("circuits", help="print the OV / direct-path / composition table of one model")
    p.add_argument("weights", type=Path, help="a weights.npz")
    p.set_defaults(func=_cmd_circuits)

    p = sub.add_parser("circuits-tables", help="write circuits.csv, composition.csv, eigenvalues.npz")
    p.add_argument("weights", type=Path)
    p.add_argument("circuits", type=Path)
    p.add_argument("composition", type=Path)
    p.add_argument("eigenvalues", type=Path)
    p.set_defaults(func=_cmd_circuits_tables)

    p = sub.add_parser("behaviour", help="prompt and failure-mode suites, attention scores")
    p.add_argument("model", type=Path)
    p.add_argument("settings", type=Path, help="behaviour settings JSON written by the workflow")
    for name in ("completions", "failure-modes", "attention", "head-scores", "summary"):
        p.add_argument(f"--{name}", type=Path, required=True)
    p.set_defaults(func=_cmd_behaviour)

    p = sub.add_parser("attention-figures", help="attention heatmaps from attention.npz")
    p.add_argument("attention", type=Path)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--title", default=None)
    p.set_defaults(func=_cmd_attention_figures)

    p = sub.add_parser("circuit-figures",
                       help="heatmaps of every head's OV and QK circuit (ov.png, qk.png) from weights.npz")
    p.add_argument("weights", type=Path, help="a weights.npz")
    p.add_argument("out_dir", type=Path, help="folder for ov.png and qk.png")
    p.add_argument("--title", default=None, help="default: the variant and seed in weights.npz")
    p.set_defaults(func=_cmd_circuit_figures)

    p = sub.add_parser("complete", help="greedy completion of your own prompts")
    p.add_argument("model", type=Path, help="a model.pt")
    p.add_argument("prompts", nargs="+", help="letters, e.g. ABCDEFABCDEF")
    p.set_defaults(func=_cmd_complete)

    p = sub.add_parser("dynamics", help="score every checkpoint of one model (training dynamics)")
    p.add_argument("model", type=Path, help="a model.pt")
    p.add_argument("checkpoints", type=Path, help="its checkpoints/ folder")
    p.add_argument("behaviour_settings", type=Path, help="behaviour settings JSON (evaluation sample)")
    p.add_argument("settings", type=Path, help="dynamics settings JSON written by the workflow")
    for name in ("dynamics", "losses", "phase-change"):
        p.add_argument(f"--{name}", type=Path, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=_cmd_dynamics)

    p = sub.add_parser("dynamics-figures", help="loss, head-score and per-position figures over training")
    p.add_argument("dynamics", type=Path, help="a dynamics.csv")
    p.add_argument("phase_change", type=Path, help="its phase_change.csv")
    p.add_argument("out_dir", type=Path)
    p.add_argument("--settings", type=Path, default=None, help="dynamics settings JSON (for the task)")
    p.add_argument("--title", default=None)
    p.set_defaults(func=_cmd_dynamics_figures)

    p = sub.add_parser("per-token-loss-pca", help="one PCA of the per-token losses of all models")
    p.add_argument("losses", type=Path, nargs="+", help="per_token_losses.npz files")
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--figure", type=Path, default=None)
    p.set_defaults(func=_cmd_per_token_loss_pca)


    p = sub.add_parser("aggregate", help="stack per-model tables; mean, std, min, max across seeds")
    p.add_argument("name", help="table name (selects its key columns)")
    p.add_argument("long", type=Path)
    p.add_argument("summary", type=Path)
    p.add_argument("inputs", type=Path, nargs="+")
    p.add_argument("--final-step", type=int, default=None,
                   help="the inputs are training logs: each must end at this step")
    p.set_defaults(func=_cmd_aggregate)

    p = sub.add_parser("claims", help="evaluate the write-up's claims on every seed")
    p.add_argument("claims_yaml", type=Path)
    p.add_argument("claims", type=Path, help="output: one row per claim and seed")
    p.add_argument("scorecard", type=Path, help="output: one row per claim")
    p.add_argument("tables", type=Path, nargs="+", help="aggregated per-seed tables")
    p.add_argument("--roles", type=Path, default=None,
                   help="behaviour settings JSON whose 'roles' hold the head-role rule "
                   "(default: 2 x chance and chance + 0.2)")
    p.add_argument("--families", type=Path, default=None,
                   help="JSON of further model families: name -> {title, models: role -> model}")
    p.add_argument("--comparison", type=Path, default=None,
                   help="output: every family's outcome of each claim, side by side")
    p.set_defaults(func=_cmd_claims)

    p = sub.add_parser("figure", help="a cross-seed figure of one variant")
    p.add_argument("name")
    p.add_argument("variant")
    p.add_argument("settings", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("inputs", type=Path, nargs="+")
    p.set_defaults(func=_cmd_figure)

    p = sub.add_parser("report", help="render the report manifest to HTML and PDF")
    p.add_argument("manifest", type=Path)
    p.add_argument("html", type=Path)
    p.add_argument("pdf", type=Path)
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("ablations", help="composition, head and smear ablations of one model")
    p.add_argument("model", type=Path)
    p.add_argument("behaviour_settings", type=Path,
                   help="behaviour settings JSON (evaluation sample, prompts)")
    p.add_argument("settings", type=Path, help="ablation settings JSON written by the workflow")
    p.add_argument("--table", type=Path, required=True, help="ablations.csv")
    p.add_argument("--attention", type=Path, required=True, help="ablated_attention.npz")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=_cmd_ablations)

    p = sub.add_parser("positional-shortcut",
                       help="positional-shortcut experiment: metrics, attention by offset, "
                       "positional scores of one model")
    p.add_argument("model", type=Path, help="a model.pt")
    p.add_argument("settings", type=Path, help="the experiment's settings JSON written by the workflow")
    for name in ("metrics", "offsets", "completions", "positions"):
        p.add_argument(f"--{name}", type=Path, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=_cmd_positional_shortcut)

    p = sub.add_parser("positional-shortcut-figures",
                       help="positional-shortcut experiment: attention by offset and positional scores")
    p.add_argument("offsets", type=Path, help="stacked positional_shortcut_offsets.csv")
    p.add_argument("positions", type=Path, help="stacked positional_shortcut_positions.csv")
    p.add_argument("settings", type=Path, help="the experiment's settings JSON (for the task)")
    p.add_argument("--offsets-figure", type=Path, required=True)
    p.add_argument("--positions-figure", type=Path, required=True)
    p.set_defaults(func=_cmd_positional_shortcut_figures)

    p = sub.add_parser("write-json",
                       help="write a JSON document given on the command line, atomically (the "
                       "workflow's spec and settings files: a shell command, so no Python job)")
    p.add_argument("out", type=Path)
    p.add_argument("document", help="the JSON text")
    p.add_argument("--indent", type=int, default=2)
    p.add_argument("--sort-keys", action="store_true")
    p.set_defaults(func=_cmd_write_json)

    p = sub.add_parser("check-config",
                       help="the workflow's config check of config.yaml here and FILEs over it, "
                       "as `snakemake --configfile FILE...` would run it")
    p.add_argument("files", type=Path, nargs="*", metavar="FILE",
                   help="config files applied in turn over ./config.yaml (if any)")
    p.add_argument("--workflow", type=Path, default=None,
                   help="the workflow's folder (default: the source tree of this package)")
    p.set_defaults(func=_cmd_check_config)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    # Every command computes with --threads threads (1 where it has no such option), as
    # the workflow's job slots assume; set before torch or numpy is imported, whose
    # thread pools read it. A variable set in the environment is left as it is.
    threads = str(max(1, getattr(args, "threads", 1)))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, threads)
    try:
        args.func(args)
    except Exception as err:  # noqa: BLE001 - sorted below; imported only now, so a light command stays light
        from .config import ConfigError
        from .core.train import TrainingDiverged

        if not isinstance(err, (ConfigError, TrainingDiverged, ValueError, OSError)):
            raise
        # BadInput (a ValueError) names the file; an OSError names it in its message.
        print(f"inductionlab {args.command}: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
