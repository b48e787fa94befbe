"""The summary's content-or-position reading, on hand-made tables whose answer is known."""
import pandas as pd
import pytest

from inductionlab.stages.readings.readings import CONTENT, NONE, POSITION, best_heads, content_or_position
from inductionlab.report.content_or_position import sentence

CHANCE = 0.127


def _heads(variant, seed, rows):
    """rows: (layer, head, induction, control, roles)."""
    return [{"variant": variant, "seed": seed, "layer": l, "head": h, "induction": ind,
             "induction_chance": CHANCE, "induction_control": ctrl,
             "induction_content": ind - ctrl, "roles": roles} for l, h, ind, ctrl, roles in rows]


def _period(variant, seed, accs):
    return [{"variant": variant, "seed": seed, "metric": f"period{n}_acc", "value": v}
            for n, v in accs.items()]


@pytest.fixture
def tables():
    heads = pd.DataFrame(
        # a content head in layer 1 (a layer-0 head scores higher but is not the last layer)
        _heads("copier", 0, [(0, 0, 0.9, 0.9, "positional_induction"), (1, 0, 0.6, 0.13, "induction"),
                             (1, 1, 0.2, 0.2, "none")])
        # a head that looks 5 back by position: the same on random sequences
        + _heads("shifter", 0, [(1, 0, 0.9, 0.88, "positional_induction")])
        + _heads("shifter", 1, [(1, 0, 0.8, 0.79, "positional_induction")])
        + _heads("plain", 0, [(0, 0, 0.13, 0.13, "none")]))
    behaviour = pd.DataFrame(
        _period("copier", 0, {4: 0.95, 6: 0.96, 8: 0.94})
        + _period("shifter", 0, {4: 0.02, 6: 1.0, 8: 0.0}) + _period("shifter", 1, {4: 0.04, 6: 1.0, 8: 0.02})
        + _period("plain", 0, {4: 0.05, 6: 0.05, 8: 0.05}))
    return heads, behaviour


def test_the_best_head_of_the_last_layer_and_its_reading(tables):
    best = best_heads(tables[0]).set_index(["variant", "seed"])
    assert (best.loc[("copier", 0), "layer"], best.loc[("copier", 0), "head"]) == (1, 0)
    assert best.loc[("copier", 0), "reading"] == CONTENT
    assert best.loc[("shifter", 1), "reading"] == POSITION
    assert best.loc[("plain", 0), "reading"] == NONE


def test_content_and_position_side_by_side_with_the_period_test(tables):
    table = content_or_position(*tables).set_index("variant")
    assert table.loc["shifter", "seeds_position"] == 2 and table.loc["shifter", "seeds_content"] == 0
    assert table.loc["shifter", "content"] == pytest.approx(0.015)
    assert table.loc["shifter", "period4_acc"] == pytest.approx(0.03)
    assert table.loc["shifter", "period6_acc"] == pytest.approx(1.0)
    assert table.loc["copier", "seeds_content"] == 1
    text = sentence(table.loc["shifter"].rename("shifter"), block_len=6)
    assert "2 of 2 seeds look at a position" in text
    assert "period test 0.01–0.03 on blocks of its untrained periods 4 and 8 against 1.00 on its trained 6." in text
    assert "content part 0.01" in text or "content part 0.02" in text
    copier = sentence(table.loc["copier"].rename("copier"), block_len=6)
    assert "1 of 1 seeds look for a copy" in copier and "× chance" in copier
