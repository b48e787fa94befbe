"""Page 1: the tally in words that agree in number, the mechanism from the tables."""
import pandas as pd

from inductionlab.claims.verdicts import (NOT_MEASURED_ANY, NOT_REPLICATED, ROBUST, SEED_DEPENDENT,
                                          TOO_CLOSE_ANY)
from inductionlab.report.front_page import copy_offsets, mechanism, tally_words


def test_tally_agrees_in_number():
    assert tally_words({ROBUST: 24, SEED_DEPENDENT: 1, NOT_REPLICATED: 0, TOO_CLOSE_ANY: 2,
                        NOT_MEASURED_ANY: 0}) == (
        "24 replicate in every seed, 1 depends on the seed and 2 are too close to call")
    assert tally_words({ROBUST: 1}) == "1 replicates in every seed"
    assert tally_words({NOT_REPLICATED: 2, NOT_MEASURED_ANY: 1}) == (
        "2 do not replicate and 1 could not be measured")
    assert tally_words({ROBUST: 0}) == "no claims"


def _reading(content, position, periods, block_len=6, n=5):
    row = {"seeds": n, "seeds_content": content, "seeds_position": position,
           "seeds_none": n - content - position, "content": 0.4 if content else 0.0}
    row.update({f"period{k}_acc": v for k, v in periods.items()})
    return pd.Series(row)


def test_mechanism_tells_content_from_position():
    content = mechanism(_reading(5, 0, {4: 1.0, 6: 1.0, 8: 0.98}), {"copies": [5, 11],
                                                                     "suppresses": [0]}, 6)
    assert content.startswith("looks for a copy")
    assert "accuracy 0.98–1.00 on blocks of its untrained periods 4 and 8 against 1.00 on its trained 6" in content
    assert "its logits copy the letters 5 and 11 back and suppress the current letter" in content
    position = mechanism(_reading(0, 5, {4: 0.05, 6: 1.0}), None, 6)
    assert position.startswith("looks at positions, not for a copy")
    assert "accuracy 0.05 on blocks of its untrained period 4 against 1.00 on its trained 6" in position
    assert mechanism(_reading(2, 1, {}), None, 6) == ("looks for a copy in 2 of 5 seeds, at positions "
                                                      "in 1, with no head that looks back for the "
                                                      "target in 2")
    assert mechanism(_reading(4, 1, {}), None, 6) == "looks for a copy in 4 of 5 seeds, at positions in 1"
    # a seed with no head is said so, never "at positions in 0"
    assert mechanism(_reading(2, 0, {}), None, 6) == ("looks for a copy in 2 of 5 seeds, with no head "
                                                      "that looks back for the target in 3")
    assert mechanism(None, {"copies": [], "suppresses": [0]}, 6) == "its logits suppress the current letter"


def test_copy_offsets_of_the_task():
    assert copy_offsets(6, 4) == [5, 11, 17] and copy_offsets(4, 2) == [3]


def test_period_figure_of_page_1():
    from inductionlab.stages.behaviour.period_plots import _wrap_name, period_figure

    rows = [{"variant": v, "seed": s, "metric": f"period{n}_acc", "value": acc}
            for v, solves in (("copy", True), ("position", False)) for s in (0, 1)
            for n in (4, 6, 8) for acc in [1.0 if solves or n == 6 else 0.05]]
    behaviour = pd.DataFrame(rows + [{"variant": "copy", "seed": 0, "metric": "loss_all", "value": 1.0}])
    fig = period_figure(behaviour, ["copy", "position", "absent"], 6)
    bars = [p.get_height() for p in fig.axes[0].patches]
    assert bars == [1.0, 1.0, 1.0, 0.05]  # trained length per model, then other lengths
    assert period_figure(behaviour[behaviour["metric"] == "loss_all"], ["copy"], 6) is None
    assert _wrap_name("one_layer_smeared_standard") == "one_layer_\nsmeared_\nstandard"


def test_outcome_verb_agrees_with_its_count():
    from inductionlab.report.front_page import outcome_verb

    assert outcome_verb(ROBUST, 24) == "replicate in every seed"
    assert outcome_verb(ROBUST, 1) == "replicates in every seed"
    assert outcome_verb(TOO_CLOSE_ANY, 3) == "are too close to call"


def test_period_figure_of_a_grid_keeps_its_labels_apart():
    """Sixteen models (a study's grid) with long names: no tick label runs into another."""
    from figurecheck import legibility_problems
    from inductionlab.stages.behaviour.period_plots import period_figure

    models = [f"atlas_{v}_T{t}" for v in ("two_layer", "one_layer_smeared") for t in (12, 16, 24, 32, 48)]
    models += ["one_layer", "one_layer_smeared", "two_layer", "atlas_one_layer_T24",
               "atlas_two_layer_normal", "atlas_one_layer_smeared_normal"]
    rows = [{"variant": v, "seed": s, "metric": f"period{n}_{kind}", "value": 0.9}
            for v in models for s in (0, 1) for n in (2, 3, 6, 9) for kind in ("acc", "trained")]
    for r in rows:
        if r["metric"].endswith("_trained"):
            r["value"] = float(r["metric"] in ("period3_trained", "period6_trained"))
    fig = period_figure(pd.DataFrame(rows), models, 6)
    # (the page-1 figure's own 6.5 pt labels and title width are its house style, not this test's)
    assert [p for p in legibility_problems(fig) if "overlaps" in p] == []
    for n in range(1, len(models)):
        fig = period_figure(pd.DataFrame(rows), models[:n], 6)
        assert [p for p in legibility_problems(fig) if "overlaps" in p] == [], n
    # the write-up's three models stay side by side
    three = period_figure(pd.DataFrame(rows), ["one_layer", "one_layer_smeared", "two_layer"], 6)
    assert three.axes[0].get_xticklabels()[0].get_rotation() == 0
