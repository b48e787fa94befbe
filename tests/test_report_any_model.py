"""The report reads for any model: any depth, any number of heads, a model outside every
family, a family named by what it changes; no number prints as a signed zero."""
import html as html_module
import re

import numpy as np
import pandas as pd
import pytest

from test_report_render import manifest  # noqa: F401  (the hand-made manifest fixture)

from inductionlab.formatting import numbers
from inductionlab.formatting import plots
from inductionlab.stages.readings.readings import algorithm_row, carrier
from inductionlab.report.algorithm_readings import part_name, sentence as algorithm_sentence
from inductionlab.report.content_or_position import _num


def sentence(profile, fit):
    """The sentence of a model as the report writes it: from its row of the readings table."""
    return algorithm_sentence(pd.Series(algorithm_row(profile, fit)))


# ------------------------------------------------------------------ numbers


@pytest.mark.parametrize("value, spec, text", [
    (-0.004, ".2f", "0.00"), (0.004, "+.2f", "0.00"), (-0.0, "g", "0"), (-0.4, ".0f", "0"),
    (-0.0004, ".1%", "0.0%"), (-0.25, ".2f", "−0.25"), (0.5, "+.2f", "+0.50"),
    (-1e-20, ".2e", "−1.00e−20")])
def test_a_number_that_prints_as_zero_has_no_sign(value, spec, text):
    assert numbers.number(value, spec) == text
    assert plots.number(value, spec) == text  # the figures' numbers are the same


def test_a_share_that_rounds_to_zero_is_0_percent():
    assert numbers.percent(-0.004) == "0 %"
    assert numbers.percent(-0.3) == "−30 %" and numbers.percent(0.6) == "60 %"
    assert _num(-0.001) == "0.00" and _num(-0.001, 3) == "−0.001"


def _fit(explained, agreement=0.5):
    return pd.DataFrame([{"variant": "m", "seed": s, "program": p, "sample": "task", "metric": m,
                          "value": v}
                         for s in (0, 1) for p in ("profile", "write_up")
                         for m, v in (("kl_explained", explained), ("agreement", agreement))])


def _profile(values_by_component, seeds=(0, 1), width=0.05):
    return pd.DataFrame([{"variant": "m", "seed": seed, "component": c, "sample": "task",
                          "source": "offset", "offset": k, "value": v, "low": v - width,
                          "high": v + width}
                         for seed in seeds for c, values in values_by_component.items()
                         for k, v in enumerate(values)])


def test_a_program_that_removes_almost_nothing_removes_0_percent_not_minus_0():
    text = sentence(_profile({"all": [-1.0, 1.0]}), _fit(-0.003))
    assert "removes 0 % of its KL" in text
    assert "−0 %" not in text and "-0 %" not in text
    # a range whose ends round to zero: no signed zero there either
    fit = _fit(-0.003)
    fit.loc[fit["seed"] == 1, "value"] = -0.2
    text = sentence(_profile({"all": [-1.0, 1.0]}), fit)
    assert "removes −10 % [−20, 0] of its KL" in text


# ------------------------------------------------------------------ any depth


def test_parts_are_named_by_layer_number():
    assert part_name("L0") == "layer 0's heads"
    assert part_name("L1:embedding") == "layer 1's heads from the embedding"
    assert part_name("L1:composed") == "layer 1's heads reading the output of layer 0"
    assert part_name("L2:composed") == "layer 2's heads reading the output of layers 0 and 1"
    assert part_name("L3:composed") == "layer 3's heads reading the output of layers 0–2"
    assert part_name("direct") == "the direct path"


def test_a_three_layer_model_is_read_by_its_own_layers():
    """Layer 2's composed paths carry the copy: the reading names layer 2, never "the
    second layer" (which would be layer 1) or layers 0–1 only."""
    T = 8
    zero = [0.0] * T
    copy = list(zero)
    copy[5] = 3.0
    small = list(zero)
    small[5] = 0.5
    direct = [-2.0] + [0.0] * (T - 1)
    parts = {"direct": direct, "L0": zero, "L1:embedding": zero, "L1:composed": small,
             "L2:embedding": small, "L2:composed": copy}
    total = [sum(v[k] for v in parts.values()) for k in range(T)]
    profile = _profile({"all": total, **parts})
    assert part_name(carrier(profile, [5], 1.0)) == "layer 2's heads reading the output of layers 0 and 1"
    text = sentence(profile, _fit(0.4))
    assert "copies the letter 5 back (mostly layer 2's heads reading the output of layers 0 and 1)" in text
    assert "suppresses the current letter (mostly the direct path)" in text
    assert "second layer" not in text and "first layer" not in text


def test_a_two_layer_model_names_its_layers_by_number():
    T = 6
    zero = [0.0] * T
    copy = list(zero)
    copy[5] = 2.0
    profile = _profile({"all": copy, "direct": zero, "L0": zero, "L1:embedding": zero,
                        "L1:composed": copy})
    assert part_name(carrier(profile, [5], 1.0)) == "layer 1's heads reading the output of layer 0"


# ------------------------------------------------------------------ page 1: every model, every family

from inductionlab.report import front_page as F  # noqa: E402
from inductionlab.claims.verdicts import WRITE_UP_TITLE, family_comparison  # noqa: E402

FAMILIES = {"positional_table": "pos_encoding: standard", "variable_period": "task: variable_period"}


def _card_row(family, claim, variant, role, holds, group="copy", quote="", statement=""):
    return {"family": family, "claim": claim, "variant": variant, "role": role, "group": group,
            "group_title": {"copy": "Copy letters from the prompt: the copying heads",
                            "no_repeat": "Don't repeat recent letters: the direct path"}[group],
            "source": "write-up" if quote else "reference", "quote": quote,
            "statement": statement, "measure": "m", "test": "≥ 0.5", "holds": holds, "fails": 2 - holds,
            "too_close": 0, "measured": 2, "seeds": 2, "verdict": f"holds in {holds} of 2 seeds",
            "range": "", "reason": ""}


def _card():
    rows = []
    for family, suffix, flips in (("write_up", "", ()), ("positional_table", "_standard", ("b",)),
                                  ("variable_period", "_period", ("a", "c"))):
        for claim, role, group, quote, statement in (
                ("one_layer.a", "one_layer", "copy", "Copies random tokens from the prompt", ""),
                ("one_layer.b", "one_layer", "no_repeat", "", "Zeroing any one head raises the loss"),
                ("two_layer.c", "two_layer", "copy", "Copies the first instance", "")):
            name = claim.split(".")[1]
            holds = 2 if (name in flips) == (name != "c") else 0
            if family == "variable_period" and role == "two_layer":
                continue  # a family without a model in this role: the claim is not evaluated there
            rows.append(_card_row(family, claim, role + suffix, role, holds, group, quote, statement))
    return pd.DataFrame(rows)


def test_outcome_of_a_comparison_cell():
    assert F.outcome_of("does not replicate (holds in 0 of 5 seeds; 0.1)") == "does not replicate"
    assert F.outcome_of("not evaluated (no model in this role)") is None
    assert F.outcome_of(float("nan")) is None


def test_each_family_is_named_by_what_it_changes_with_its_own_count():
    card = _card()
    comparison = family_comparison(card, {"write_up": WRITE_UP_TITLE, **FAMILIES})
    changes = F.family_changes(comparison, FAMILIES, WRITE_UP_TITLE)
    assert [c["title"] for c in changes] == ["pos_encoding: standard", "task: variable_period"]
    standard, period = changes
    assert standard["n"] == 3 and [c["claim"] for c in standard["changed"]] == ["one_layer.b"]
    # two_layer.c is not evaluated in the variable-period family: not a change, not counted
    assert period["n"] == 2 and [c["claim"] for c in period["changed"]] == ["one_layer.a"]
    assert period["changed"][0]["before"] == "does not replicate"
    assert period["changed"][0]["after"] == "replicates in every seed"


def test_changed_claims_read_in_words_grouped_by_model_and_group():
    card = _card()
    write_up = card[card["family"] == "write_up"]
    items = [{"role": "two_layer", "claim": "two_layer.c"}, {"role": "one_layer", "claim": "one_layer.b"},
             {"role": "one_layer", "claim": "one_layer.a"}]
    groups = F.claims_in_words(items, write_up, ["one_layer", "two_layer"])
    assert [g["model"] for g in groups] == ["one_layer", "two_layer"]
    one = groups[0]["groups"]
    assert [g["title"] for g in one] == ["Don't repeat recent letters", "Copy letters from the prompt"]
    assert one[0]["claims"][0]["words"] == "Zeroing any one head raises the loss"
    assert one[1]["claims"][0]["words"] == "“Copies random tokens from the prompt”"
    words = [c["words"] for g in groups for grp in g["groups"] for c in grp["claims"]]
    assert not any("." in w.strip("“”") or "_" in w for w in words)  # never a raw id


def test_every_other_model_is_listed_with_its_family_or_no_claims():
    card = _card()
    others = F.other_models(["one_layer", "two_layer", "three_layer", "eight_head", "one_layer_standard",
                             "one_layer_learned"], ["one_layer", "two_layer"], card, FAMILIES)
    by_name = {o["variant"]: o for o in others}
    assert list(by_name) == ["three_layer", "eight_head", "one_layer_standard", "one_layer_learned"]
    for m in ("three_layer", "eight_head", "one_layer_learned"):
        assert by_name[m]["family"] is None
        assert by_name[m]["words"] == "no claims: the write-up's claims are about its three models"
    standard = by_name["one_layer_standard"]
    assert (standard["family"], standard["role"], standard["n"]) == ("pos_encoding: standard", "one_layer", 2)
    assert standard["tally"] == "1 replicates in every seed and 1 does not replicate"


def test_a_grid_of_models_without_claims_is_one_bullet_on_page_one():
    """Up to four models without claims keep a bullet each; a fifth sends all of them to the
    summary (page 1 names them); a model of a family always stays on page 1."""
    card = _card()
    names = ["one_layer", "two_layer", "one_layer_standard"]
    few = F.other_models(names + ["a", "b", "c", "d"], ["one_layer", "two_layer"], card, FAMILIES)
    front, summary = F.split_unclaimed(few)
    assert [m["variant"] for m in front] == ["one_layer_standard", "a", "b", "c", "d"] and summary == []
    many = F.other_models(names + ["a", "b", "c", "d", "e"], ["one_layer", "two_layer"], card, FAMILIES)
    front, summary = F.split_unclaimed(many)
    assert [m["variant"] for m in front] == ["one_layer_standard"]
    assert [m["variant"] for m in summary] == ["a", "b", "c", "d", "e"]


def test_page_one_lists_every_model_and_names_each_family(manifest, tmp_path):
    """A 3-layer model outside every family is on page 1 with no claims; each family's
    changed verdicts are named by what the family changes, in words, not ids."""
    from inductionlab.report.render import build_html

    card = pd.read_csv(manifest["scorecard"], keep_default_na=False)
    card.insert(0, "family", "write_up")
    card["role"] = card["variant"]
    flipped = card.assign(family="positional_table", variant=card["variant"] + "_standard")
    flipped["holds"], flipped["fails"] = flipped["measured"], 0  # holds in every measured seed
    full = pd.concat([card, flipped], ignore_index=True)
    full.to_csv(tmp_path / "scorecard.csv", index=False)
    comparison = family_comparison(full, {"write_up": WRITE_UP_TITLE,
                                          "positional_table": "pos_encoding: standard"})
    comparison.to_csv(tmp_path / "family_comparison.csv", index=False)
    manifest = {**manifest, "scorecard": str(tmp_path / "scorecard.csv"),
                "family_comparison": str(tmp_path / "family_comparison.csv"),
                "families": {"positional_table": "pos_encoding: standard"},
                "variants": manifest["variants"] + ["three_layer"]}
    html = build_html(manifest)
    front = html[html.index('class="title-page"'):html.index('id="summary"')]
    text = html_module.unescape(" ".join(re.sub(r"<[^>]+>", " ", front).split()))
    assert ("three_layer : no claims: the write-up's claims are about its three models "
            "(one_layer, two_layer).") in text
    assert "one_layer_standard : in the family “pos_encoding: standard” (positional_table) as one_layer" in text
    assert "1 of 2 verdicts change with pos_encoding: standard" in text
    assert "positional table" not in text
    # the changed claims themselves, with both outcomes, are the summary's, not page 1's
    assert "(depends on the seed → replicates in every seed)" not in text
    section = html[html.index('id="families"'):html.index('id="families-every"')]
    summary = html_module.unescape(" ".join(re.sub(r"<[^>]+>", " ", section).split()))
    assert "With pos_encoding: standard (the family positional_table), 1 of 2 claims change" in summary
    assert "(depends on the seed → replicates in every seed)" in summary
    listed = section[section.index('class="answer claim-list"'):]
    listed = listed[:listed.index("</ul>")]
    assert "claim-id" not in listed and "fails_task" not in listed
    assert "“Fails at &lt;this&gt; task”" in listed  # the claim in the write-up's words, escaped


# ------------------------------------------------------------------ a table too wide for the page


def _heads_table(path, n_layers=3, n_heads=8):
    scores = ["induction", "induction_low", "induction_high", "induction_control", "nearest",
              "nearest_control", "first_block", "first_block_control", "first_token",
              "previous_token", "local", "prefix_matching"]
    rng = np.random.default_rng(0)
    rows = [{"variant": "deep", "seed": s, "layer": l, "head": h,
             **{c: float(rng.random()) * 1e-3 for c in scores}}
            for s in (0, 1) for l in range(n_layers) for h in range(n_heads)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _table_overflow_pt(fragment: str) -> float:
    """How far the widest table of ``fragment`` runs past the page's text column in the
    report's stylesheet (weasyprint's layout; 0 when none does)."""
    from pathlib import Path

    from weasyprint import HTML

    import inductionlab.report.render as R

    css = (Path(R.__file__).parent / "report.css").read_text()
    doc = HTML(string=f"<html><head><style>{css}</style></head><body>{fragment}</body></html>").render()
    worst = 0.0

    def walk(box):
        yield box
        for child in getattr(box, "children", []) or []:
            yield from walk(child)

    for page in doc.pages:
        root = page._page_box
        right = root.content_box_x() + root.width
        for box in walk(root):
            if type(box).__name__ in ("TableBox", "TableWrapperBox"):
                worst = max(worst, box.position_x + box.margin_width() - right)
    return worst


def test_a_wide_table_is_split_to_fit_the_page(tmp_path):
    from inductionlab.report import tables as T

    path = _heads_table(tmp_path / "head_scores.csv")
    wide = T.render_table({"path": str(path), "where": {"seed": 0}}, "deep")
    assert wide.count("<table>") > 1  # 15 columns of scores with their labels: split
    assert "the same rows, further columns" in wide
    for part in wide.split("<table>")[1:]:
        head = part.split("</thead>")[0]
        assert head.count("<th>") >= 3 and "<th>seed</th><th>layer</th><th>head</th>" in head
    assert _table_overflow_pt(wide) <= 0
    # a pivot of 3 layers × 8 heads (24 columns) likewise
    pivot = T.render_table({"path": str(path), "pivot": {"index": ["seed"], "columns": ["layer", "head"],
                                                         "values": "first_block", "label": "L{}H{}"}}, "deep")
    assert pivot.count("<table>") > 1 and _table_overflow_pt(pivot) <= 0
    # a table that fits stays one table
    narrow = T.render_table({"path": str(path), "columns": ["seed", "layer", "head", "induction"]}, "deep")
    assert narrow.count("<table>") == 1


def test_page_one_names_a_grid_in_one_bullet_and_the_summary_reads_each(manifest):
    from inductionlab.report.render import build_html

    grid = [f"grid_T{t}" for t in (12, 16, 24, 32, 48)]
    html = build_html({**manifest, "variants": manifest["variants"] + grid})
    front = html[html.index('class="title-page"'):html.index('id="summary"')]
    text = html_module.unescape(" ".join(re.sub(r"<[^>]+>", " ", front).split()))
    assert ("5 more models , no claims: the write-up's claims are about its three models "
            "(one_layer, two_layer): grid_T12, grid_T16, grid_T24, grid_T32, grid_T48") in text
    assert "grid_T12 :" not in text  # no bullet of its own
    summary = html[html.index('id="unclaimed"'):]
    summary = html_module.unescape(" ".join(re.sub(r"<[^>]+>", " ", summary).split()))
    for name in grid:
        assert f"{name} " in summary
