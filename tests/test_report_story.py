"""The summary page's story, the role-aligned and de-duplicated tables, and the labels."""
import pandas as pd
import pytest

from inductionlab.claims import verdicts as C
from inductionlab.report import story as S
from inductionlab.report import tables as T
from inductionlab.formatting.labels import label


def card_row(claim, holds, measured, seeds=5, **kw):
    return {"claim": claim, "variant": kw.pop("variant", "m"), "group": kw.pop("group", "g"),
            "source": kw.pop("source", "write-up"), "quote": kw.pop("quote", "it works"),
            "statement": kw.pop("statement", ""), "test": "≥ 0.5", "range": kw.pop("range", "[0.6, 0.9]"),
            "reason": kw.pop("reason", ""), "notes": "", "holds": holds, "measured": measured,
            "seeds": seeds, **kw}


def test_outcomes_and_tally():
    card = pd.DataFrame([card_row("a", 5, 5), card_row("b", 2, 5), card_row("c", 0, 5),
                         card_row("d", 0, 0, reason="no head has the induction role"),
                         card_row("e", 0, 3),  # measured in 3, holds in none: not replicated
                         card_row("f", 2, 2),  # holds wherever measured (2 of 5): the others give no support
                         card_row("g", 4, 5, too_close=1, fails=0)])  # one seed undecided
    assert [C.outcome(r) for _, r in card.iterrows()] == [
        C.ROBUST, C.SEED_DEPENDENT, C.NOT_REPLICATED, C.NOT_MEASURED_ANY, C.NOT_REPLICATED,
        C.ROBUST, C.TOO_CLOSE_ANY]
    assert S.tally(card) == {C.ROBUST: 2, C.SEED_DEPENDENT: 1, C.NOT_REPLICATED: 2,
                             C.TOO_CLOSE_ANY: 1, C.NOT_MEASURED_ANY: 1}
    assert S.evidence(card.iloc[3]) == "no head has the induction role"
    assert S.evidence(card.iloc[0]) == "[0.6, 0.9] (test ≥ 0.5); holds in 5 of 5 seeds"
    attention = pd.Series(card_row("f", 5, 5, chance="0.127"))  # an attention score: its chance level
    assert S.evidence(attention) == "[0.6, 0.9] (test ≥ 0.5, chance 0.127); holds in 5 of 5 seeds"
    summarised = pd.Series(card_row("h", 5, 5, summary="mean 0.75 [0.6, 0.9] over seeds",
                                    verdict="holds in 5 of 5 seeds"))
    # with a mean: the range and the test are left to the scorecard
    assert S.evidence(summarised) == "mean 0.75 [0.6, 0.9] over seeds; holds in 5 of 5 seeds"
    measured = pd.Series({**summarised, "measure": "accuracy of greedy completions"})
    assert S.evidence(measured) == ("accuracy of greedy completions: mean 0.75 [0.6, 0.9] over "
                                    "seeds; holds in 5 of 5 seeds")


def test_story_groups_follow_the_claims_file_and_quotes_only_the_write_up():
    card = pd.DataFrame([card_row("x", 0, 5, group="late"),
                         card_row("y", 5, 5, group="early", source="anthropic", quote="",
                                  statement="heads need two layers"),
                         card_row("z", 5, 5, group="late", variant="other")])
    chapters = S.story(card, ["m", "other"], {"early": "Early algorithm", "late": "Late one"})
    assert [c["variant"] for c in chapters] == ["m", "other"]
    groups = chapters[0]["groups"]
    assert [g["title"] for g in groups] == ["Early algorithm", "Late one"]
    assert groups[0]["items"][0]["words"] == "heads need two layers"  # a paraphrase: no quotes
    assert groups[1]["items"][0]["words"] == "“it works”"


def test_highlight_numbers_come_from_the_summary_table(tmp_path):
    path = tmp_path / "s.csv"
    pd.DataFrame({"variant": ["a", "b"], "metric": ["loss_all"] * 2, "n": [3, 1],
                  "mean": [0.7761, 2.6], "std": [0.01, float("nan")], "min": [0.77, 2.6],
                  "max": [0.79, 2.6]}).to_csv(path, index=False)
    text = S.highlight_text({"path": str(path), "text": "a {a:loss_all}, b {b:loss_all}, c {c:loss_all}"})
    assert text == "a 0.776 [0.770, 0.790], b 2.60, c –"


def test_highlight_reads_each_number_from_the_first_table_that_has_it(tmp_path):
    def table(name, rows):
        path = tmp_path / name
        pd.DataFrame([{"variant": v, "metric": m, "n": 1, "mean": x, "std": float("nan"),
                       "min": x, "max": x} for v, m, x in rows]).to_csv(path, index=False)
        return str(path)

    headline = table("h.csv", [("a", "loss_all", 1.22)])
    study = table("s.csv", [("a", "loss_all", 1.21), ("a", "induction_max", 0.37)])
    text = S.highlight_text({"paths": [headline, study], "text": "{a:loss_all} {a:induction_max}"})
    assert text == "1.22 0.370"


def test_heads_are_aligned_by_rank_not_by_number():
    # seed 0's strongest head is head 2, seed 1's is head 0: by index they would average
    frame = pd.DataFrame({"seed": [0, 0, 0, 1, 1, 1], "layer": [0] * 6, "head": [0, 1, 2] * 2,
                          "v": [0.1, 0.5, 0.9, 0.8, 0.2, 0.4]})
    out = T.ranked(frame, ["seed", "layer"], "v", ["v"])
    assert list(out["rank"]) == [1, 2, 3]
    assert out["v"][0].startswith("0.850&nbsp;±&nbsp;0.071")  # 0.9 and 0.8
    assert "[0.100,&nbsp;0.200]" in out["v"][2]  # the weakest heads, 0.1 and 0.2


def test_duplicated_rows_are_left_out_with_a_note(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"ablation": ["baseline", "qk_full_L1", "keys_off"], "loss": [1.38, 1.38, 2.6]}
                 ).to_csv(path, index=False)
    html = T.render_table({"path": str(path), "dedupe": True})
    assert "qk_full_L1 (= baseline)" in html and html.count("<tr>") == 3  # header + 2 rows
    assert "qk_full_L1</td>" not in html
    assert T.render_table({"path": str(path)}).count("<tr>") == 4


@pytest.mark.parametrize("name, text", [
    ("copying", "copying score (z-score)"),
    ("random_distinct_len12_acc_mean", "random distinct-letter 12-letter prompts: greedy accuracy"),
    ("induction_chance_L1", "layer 1 induction (all copies), chance level"),
    ("first_block_chance", "first-block copy: chance level"),
    ("some_new_metric", "some new metric"),
])
def test_labels(name, text):
    assert label(name) == text


def test_a_figure_prints_at_the_size_it_was_drawn_for(tmp_path):
    import matplotlib.pyplot as plt

    from inductionlab.formatting.plots import STYLE, save
    from inductionlab.report.render import figure_item

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(3.0, 2.0))
        ax.plot([0, 1])
    save(fig, tmp_path / "f.png")  # bbox tight: a little narrower than 3 in
    item = figure_item({"path": str(tmp_path / "f.png"), "caption": "c"}, 7)
    assert item["number"] == 7 and item["uri"].startswith("data:image/png;base64,")
    assert 2.0 < item["width_in"] <= 3.1
