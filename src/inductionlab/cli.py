"""Command line: ``inductionlab <command> ...``; the workflow's rules call these."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_train(args) -> None:
    from .spec import read_spec
    from .train import train

    train(read_spec(args.spec), args.out_dir, threads=args.threads)


def _cmd_extract_weights(args) -> None:
    from .train import load_model
    from .weights import save_weights

    model, spec = load_model(args.model)
    save_weights(args.out, model, spec)
    print(f"wrote {args.out}", file=sys.stderr)


def _cmd_check_config(args) -> None:
    from .config import load_config

    config = load_config(args.config, args.schema)
    n = len(config["variants"]) * len(config["seeds"])
    print(f"{args.config}: valid; {len(config['variants'])} variant(s) x "
          f"{len(config['seeds'])} seed(s) = {n} model(s)")


def _cmd_circuits(args) -> None:
    from .circuits import format_circuits_report
    from .weights import load_weights

    print(format_circuits_report(*load_weights(args.weights)), end="")


def _cmd_circuits_tables(args) -> None:
    from .circuits import write_circuits

    write_circuits(args.weights, args.circuits, args.composition, args.eigenvalues)


def _cmd_behaviour(args) -> None:
    from .behaviour import write_behaviour

    write_behaviour(args.model, args.settings, args.completions, args.failure_modes,
                    args.attention, args.head_scores, args.summary,
                    log=lambda msg: print(msg, file=sys.stderr, flush=True))


def _cmd_attention_figures(args) -> None:
    from .atomic import atomic_dir
    from .plots import write_attention_figures

    with atomic_dir(args.out_dir) as tmp:
        write_attention_figures(args.attention, tmp, title=args.title or _model_title(args.attention))


def _model_title(path: Path) -> str:
    """'variant seed N' from a results/{variant}/seed{N}/... path, else the file name."""
    parts = Path(path).parts
    if len(parts) >= 3 and parts[-2].startswith("seed"):
        return f"{parts[-3]} {parts[-2].replace('seed', 'seed ')}:"
    return f"{Path(path).name}:"


def _cmd_complete(args) -> None:
    from .behaviour import check_prompt, expected_completion, greedy_complete
    from .data import TaskConfig, decode
    from .train import load_model

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="inductionlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train one model from its spec.json")
    p.add_argument("spec", type=Path, help="spec.json written by the workflow")
    p.add_argument("out_dir", type=Path, help="folder for model.pt, train_log.csv, checkpoints/")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=_cmd_train)

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

    p = sub.add_parser("complete", help="greedy completion of your own prompts")
    p.add_argument("model", type=Path, help="a model.pt")
    p.add_argument("prompts", nargs="+", help="letters, e.g. ABCDEFABCDEF")
    p.set_defaults(func=_cmd_complete)

    p = sub.add_parser("check-config", help="validate a config file against the schema")
    p.add_argument("config", type=Path, nargs="?", default=Path("config.yaml"))
    p.add_argument("--schema", type=Path, default=Path("workflow/schemas/config.schema.yaml"))
    p.set_defaults(func=_cmd_check_config)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    from .config import ConfigError
    from .train import TrainingDiverged

    try:
        args.func(args)
    except (ConfigError, TrainingDiverged, ValueError, FileNotFoundError) as err:
        print(f"inductionlab {args.command}: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
