"""Models derived from the config's variants, and the positional-table study's module."""
import re

import pytest

from helpers import ROOT, SCHEMA
from inductionlab.config import load_config
from inductionlab.experiments.positional_table.analysis import variance_share
from inductionlab.experiments.positional_table.settings import check_settings
from inductionlab.core.spec import DerivedModel, make_spec

TINY = ROOT / "tests" / "config.tiny.yaml"


def test_a_derived_model_changes_only_its_name_and_the_changed_fields():
    config = load_config(TINY, SCHEMA)
    base = make_spec(config, "one_layer", 2)
    derived = DerivedModel.of(config, "one_layer_learned", "one_layer", {"pos_encoding": "learned"})
    spec = make_spec(config, "one_layer_learned", 2, derived)
    assert spec["model"]["pos_encoding"] == "learned" and spec["variant"] == "one_layer_learned"
    assert base["model"].get("pos_encoding", "original") == "original"  # not modified
    assert {**spec, "variant": base["variant"], "model": base["model"]} == base
    assert {**spec["model"], "pos_encoding": base["model"]["pos_encoding"]} == base["model"]


@pytest.mark.parametrize("name, base, changes, why", [
    ("one_layer", "one_layer", {"pos_encoding": "learned"}, "already a variant"),
    ("x", "nine_layer", {"pos_encoding": "learned"}, "base variant 'nine_layer' is not in"),
    ("x", "one_layer", {}, "no field of 'one_layer' is changed"),
    ("x", "one_layer", {"depth": 3}, "unknown model field"),
    ("x", "one_layer", {"pos_encoding": "rotary"}, "pos_encoding='rotary'"),
    ("x", "one_layer", {"smear_layers": [3]}, "do not exist"),
])
def test_a_derived_model_is_checked_against_the_config(name, base, changes, why):
    config = load_config(TINY, SCHEMA)
    with pytest.raises(ValueError, match=re.escape(why)):
        DerivedModel.of(config, name, base, changes)


def test_the_original_table_varies_only_in_its_first_three_dimensions():
    # original: dimension j turns at 1 / 10000^(2j/8); from j = 3 on, under 0.1 rad over
    # 24 positions (cos ~ 1, sin ~ 0). standard: pairs (0,1) and (2,3) both turn.
    assert variance_share("original", 24, 8) > 0.9999
    assert 0.7 < variance_share("standard", 24, 8) < 0.8
    assert variance_share("standard", 24, 8, first=8) == pytest.approx(1.0)


def test_study_settings_name_the_variant_that_cannot_be_retrained():
    config = load_config(TINY, SCHEMA)
    good = {"pos_encoding": "standard", "variants": ["one_layer", "two_layer"]}
    assert check_settings(good, config) == []
    problems = check_settings({"pos_encoding": "original", "variants": ["one_layer", "nope"]}, config)
    assert problems == [
        "experiments.positional_table.pos_encoding: variant 'one_layer' has pos_encoding "
        "'original' already; retraining it would change nothing",
        "experiments.positional_table.variants: 'nope' is not in variants "
        "['one_layer', 'one_layer_smeared', 'three_layer', 'two_layer']"]
