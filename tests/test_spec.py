"""The typed spec: one model's spec.json parsed once."""
import json

import pytest

from helpers import tiny_spec
from inductionlab.core.data import TaskConfig
from inductionlab.core.loading import BadInput, read_spec
from inductionlab.core.model import ModelConfig
from inductionlab.core.spec import Spec, write_spec
from inductionlab.core.resume import resume_key


def test_a_spec_is_parsed_into_typed_parts_and_keeps_its_document(tmp_path):
    document = tiny_spec(variant="one_layer", seed=3, steps=40, n_layers=1, smear_layers=[0])
    spec = Spec.from_dict(document)
    assert spec.task == TaskConfig(26, 6, 4)
    assert spec.model == ModelConfig(vocab_size=26, d_model=32, n_heads=4, n_layers=1,
                                     seq_len=24, smear_layers=(0,))
    assert (spec.train.steps, spec.train.lr, spec.train.compile) == (40, 1e-3, "auto")
    assert spec.name == "one_layer seed 3" and spec.device == "cpu"
    assert spec.to_dict() == document and spec.to_dict() is not spec.document
    write_spec(tmp_path / "spec.json", spec)
    assert json.loads((tmp_path / "spec.json").read_text()) == document
    again = read_spec(tmp_path / "spec.json")
    assert again == spec and Spec.of(again) is again
    # the resume key hashes the document: a parsed spec and its file give the same key
    assert resume_key(again, "single") == resume_key(spec, "single")


def test_seeds_of_one_model_differ_only_in_their_seed():
    a, b = Spec.from_dict(tiny_spec(seed=0)), Spec.from_dict(tiny_spec(seed=1))
    assert a != b and a.without_seed() == b.without_seed()
    assert Spec.from_dict(tiny_spec(n_layers=1)).without_seed() != a.without_seed()


@pytest.mark.parametrize("change,words", [
    (lambda d: d.pop("train"), "missing key(s) ['train']"),
    (lambda d: d["train"].pop("lr"), "train settings are missing ['lr']"),
    (lambda d: d["train"].update(steps=2.5), "train.steps: 2.5 is not an integer"),
    (lambda d: d["train"].update(lr="fast"), "train.lr: 'fast' is not a number"),
    (lambda d: d["train"].update(steps=True), "train.steps: True is not an integer"),
    (lambda d: d["model"].update(n_heads=3), "not divisible"),
    (lambda d: d["model"].update(colour="red"), "unknown model field(s) ['colour']"),
])
def test_a_bad_spec_is_refused_naming_what_is_wrong(tmp_path, change, words):
    document = tiny_spec()
    change(document)
    with pytest.raises(ValueError) as err:
        Spec.from_dict(document)
    assert words in str(err.value)
    (tmp_path / "spec.json").write_text(json.dumps(document))
    with pytest.raises(BadInput, match="spec.json: not a valid spec"):
        read_spec(tmp_path / "spec.json")
