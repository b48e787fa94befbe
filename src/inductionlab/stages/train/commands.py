"""The training stage's commands: a model's spec, its training (alone or seeds stacked), its weights."""
from __future__ import annotations

from ..commands import THREADS, command, path, paths, say, text
from ..documents import _json_document


@command("train", "train one model from its spec.json",
         spec=path("spec.json written by the workflow"),
         out_dir=path("folder for model.pt, train_log.csv, checkpoints/"),
         threads=THREADS)
def train(spec, out_dir, threads):
    from ...core.loading import read_spec
    from ...core.train import train as train_model

    train_model(read_spec(spec), out_dir, threads=threads)


@command("train-stacked", "train several seeds of one spec as one stacked model",
         specs=paths("spec.json files differing only in their seed; each model's outputs go "
                     "to its spec's folder"),
         threads=THREADS)
def train_stacked(specs, threads):
    from ...core.loading import read_spec
    from ...core.stacked import train_stacked as train_models

    train_models([read_spec(p) for p in specs], [p.parent for p in specs], threads=threads)


@command("extract-weights", "write weights.npz from model.pt",
         model=path("a model.pt"), out=path("the weights.npz to write"))
def extract_weights(model, out):
    from ...core.loading import load_model
    from ...core.weights import save_weights

    loaded, spec = load_model(model)
    save_weights(out, loaded, spec)
    say(f"wrote {out}")


@command("write-spec", "write a model's spec.json from the JSON document given on the command "
         "line, checked as training reads it (a shell command, so no Python job)",
         out=path("the spec.json to write"), document=text("the spec as JSON text", required=True))
def write_spec_file(out, document):
    from ...core.spec import Spec, write_spec

    parsed = _json_document(out, document)
    try:
        spec = Spec.from_dict(parsed)
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise ValueError(f"{out}: not a valid spec ({err}); nothing was written") from None
    write_spec(out, spec)
    say(f"wrote {out}")
