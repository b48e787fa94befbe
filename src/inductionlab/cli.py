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
