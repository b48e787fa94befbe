"""The training stage's commands: a model's training (alone or seeds stacked, writing its spec
first), its weights."""
from __future__ import annotations

from ..commands import THREADS, Option, command, optional_path, path, paths, say, text
from ..documents import _json_document


@command("train", "train one model from its spec.json",
         spec=path("the model's spec.json: read, or with --document written first"),
         out_dir=path("folder for model.pt, train_log.csv, checkpoints/"),
         document=text("the spec as JSON text, checked and written to --spec before training "
                       "(the workflow's way: no process of its own for a JSON file)"),
         reference=optional_path("the trained model.pt a clamp to a trained reference takes its "
                                 "activations from (train.intervention: {kind: clamp, reference: "
                                 "trained}): the same model and seed"),
         threads=THREADS)
def train(spec, out_dir, threads, document=None, reference=None):
    from ...core.loading import read_spec
    from ...core.train import train as train_model

    if document is not None:
        write_spec_file(spec, document)
    parsed = read_spec(spec)
    _refuse_what_cannot_fit(spec, parsed)
    train_model(parsed, out_dir, threads=threads, reference=reference)


@command("train-stacked", "train several seeds of one spec as one stacked model",
         specs=paths("spec.json files differing only in their seed; each model's outputs go "
                     "to its spec's folder"),
         documents=Option("the specs as JSON texts, one per --specs file, checked and written "
                          "there before training", type=str, many=True, required=False),
         threads=THREADS)
def train_stacked(specs, threads, documents=None):
    from ...core.loading import read_spec
    from ...core.stacked import train_stacked as train_models

    if documents is not None:
        if len(documents) != len(specs):
            raise ValueError(f"{len(documents)} --documents for {len(specs)} --specs; give one each")
        for path, document in zip(specs, documents):
            write_spec_file(path, document)
    parsed = [read_spec(p) for p in specs]
    _refuse_what_cannot_fit(specs[0], parsed[0], seeds=len(parsed))
    train_models(parsed, [p.parent for p in specs], threads=threads)


@command("extract-weights", "write weights.npz from model.pt",
         model=path("a model.pt"), out=path("the weights.npz to write"),
         spec=optional_path("the model's spec.json, checked to be the file its training wrote "
                            "and the spec the model was trained on"))
def extract_weights(model, out, spec=None):
    from ...core.loading import load_model, read_spec
    from ...core.weights import save_weights

    loaded, trained = load_model(model)
    if spec is not None and read_spec(spec).to_dict() != trained.to_dict():
        raise ValueError(f"{spec} is not the spec {model} was trained on; delete it and rerun "
                         "snakemake, which trains the model from config.yaml again")
    save_weights(out, loaded, trained)
    say(f"wrote {out}")


def _refuse_what_cannot_fit(path, spec, seeds: int = 1) -> None:
    """Refuse, before anything is allocated, training ``seeds`` models of ``spec`` (read
    from ``path``) at once when they would need more memory than this machine gives a
    process (:mod:`inductionlab.core.bounds`)."""
    from ...core.bounds import spec_training_problem

    problem = spec_training_problem(spec, seeds)
    if problem:
        raise ValueError(f"{path}: {problem}; nothing was trained")


def write_spec_file(out, document: str) -> None:
    """Write the spec given as JSON text to ``out``, checked as training reads it."""
    from ...core.spec import Spec, write_spec

    parsed = _json_document(out, document)
    try:
        spec = Spec.from_dict(parsed)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise ValueError(f"{out}: not a valid spec ({err}); nothing was written") from None
    write_spec(out, spec)
    say(f"wrote {out}")
