"""The report's house style: true minus signs, one display form per head role, head labels
L0H1, and one rule for digits, in tables, figures and text."""
import re

import numpy as np
import pandas as pd
import pytest
from matplotlib import pyplot as plt

from figurecheck import legibility_problems
from inductionlab.analysis.roles import NO_ROLE, ROLE_SCORES, positional_role, role_names
from inductionlab.formatting import plots
from inductionlab.stages.offsets import plots as offset_plots
from inductionlab.report import tables as T
from inductionlab.formatting.labels import (MINUS, ROLE_ABBREVIATIONS, ROLE_LABELS, minus_signs,
                                            role_label, roles_label, value_label)


def _cells(html):
    return [re.findall(r"<t[hd]>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", html)]


# ---------------------------------------------------------------- minus signs

@pytest.mark.parametrize("text, shown", [
    ("-0.9996", "−0.9996"),
    ("-0.712, -0.857", "−0.712, −0.857"),
    ("OV positivity < -0.5", "OV positivity < −0.5"),
    ("(-1)", "(−1)"),
    ("-.5", "−.5"),
    ("-5.327597e-16, 0", "−5.327597e−16, 0"),
    ("anti-copying", "anti-copying"),  # a hyphen in a word stays
    ("ABCXYZABCDEF-like", "ABCXYZABCDEF-like"),
    ("A[i, i-5]", "A[i, i-5]"),  # an index expression: not a sign
    ("10-90 %", "10-90 %"),  # a range
    ("−0.5", "−0.5"),  # already a minus
])
def test_minus_signs_turns_only_signs_into_true_minus_signs(text, shown):
    assert minus_signs(text) == shown


def test_table_cells_show_true_minus_signs_in_numbers_and_text():
    assert T.fmt(-0.25) == "−0.250"
    assert T.fmt(-3) == "−3"
    assert T.fmt("-0.9996") == "−0.9996"  # a number printed as text (the write-up's)
    assert T.fmt("anti-copying, -1 back") == "anti-copying, −1 back"
    assert T.fmt("a<b") == "a&lt;b"


def test_figures_use_the_true_minus_sign():
    assert plots.STYLE["axes.unicode_minus"] is True
    assert plots.number(-0.25) == f"{MINUS}0.25" and plots.number(0.5, "+.2f") == "+0.50"
    assert plots.tick_format(".2f")(-0.5, 0) == f"{MINUS}0.50"
    with plt.rc_context(plots.STYLE):
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([-2, 2], [-1, 1])
        ax.set_title("a line")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        fig.canvas.draw()
        ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert any(t.startswith(MINUS) for t in ticks) and not any(t.startswith("-") for t in ticks)
        assert not legibility_problems(fig)
        ax.legend(handles=ax.lines, labels=["slope -0.5"])  # a hyphen for a minus: flagged
        ax.text(0, 0, "$10^{-1}$")  # mathtext draws its own minus sign: not flagged
        problems = legibility_problems(fig)
    assert problems == ["hyphen for a minus sign in text 'slope -0.5'"]
    plt.close(fig)


# ---------------------------------------------------------------- head roles

def test_every_role_has_one_display_form():
    roles = list(ROLE_SCORES) + [positional_role(s) for s in ("induction", "prefix_matching")]
    roles += ["copying", "anti_copying", "none"]
    assert set(roles) == set(role_names()) | {NO_ROLE}  # every role the rule gives
    assert set(ROLE_LABELS) == set(roles) == set(ROLE_ABBREVIATIONS)
    for role in roles:
        assert role in ROLE_LABELS and "_" not in role_label(role), role
    assert role_label("anti_copying") == "anti-copying"
    assert role_label("positional_induction") == "positional induction"
    assert role_label("prefix_matching") == "prefix matching"
    assert role_label("positional_local") == "positional local"  # a new positional role
    # the panels' abbreviations stand for roles that have a display form
    assert set(ROLE_ABBREVIATIONS) <= set(ROLE_LABELS)


def test_a_roles_cell_reads_in_display_forms():
    assert roles_label("induction+prefix_matching+copying") == "induction + prefix matching + copying"
    assert roles_label("positional_induction+positional_prefix_matching") == \
        "positional induction + positional prefix matching"
    assert roles_label("none") == roles_label("") == roles_label(float("nan")) == "no role"
    assert value_label("roles", "anti_copying") == "anti-copying"
    assert value_label("role", "one_layer") == "one_layer"  # a write-up model's role: a name


def test_offset_profile_rows_name_roles_in_their_display_form():
    for role in offset_plots.ROLE_ORDER:
        assert offset_plots.role_word(role) == role_label(role)
    assert offset_plots.row_label("L0H0", "positional_induction+positional_prefix_matching+copying") \
        == "L0H0 positional induction"
    assert offset_plots.row_label("L0H1>L1H3", "anti_copying") == "L0H1>L1H3 anti-copying"
    assert offset_plots.row_label("L0H2", "none") == "L0H2"


@pytest.fixture
def heads_csv(tmp_path):
    """A head table whose layer and head columns are floats (a NaN elsewhere in the file
    makes pandas read them so), with each head's roles."""
    path = tmp_path / "heads.csv"
    pd.DataFrame({"variant": ["a"] * 4, "seed": [0, 0, 1, 1], "layer": [0.0, 1.0, 0.0, 1.0],
                  "head": [1.0, 0.0, 1.0, 0.0], "delta_loss_all": [0.25, -0.5, 0.3, np.nan],
                  "roles": ["anti_copying", "positional_induction+copying", "none", "copying"]}
                 ).to_csv(path, index=False)
    return path


def test_pivoted_head_columns_read_L0H1_never_L0_0H1_0(heads_csv):
    spec = {"path": str(heads_csv), "pivot": {"index": ["seed"], "columns": ["layer", "head"],
                                              "values": "delta_loss_all", "label": "L{}H{}"}}
    rows = _cells(T.render_table(spec))
    assert rows[0] == ["seed", "L0H1", "L1H0"]
    assert rows[1] == ["0", "0.250", "−0.500"]


def test_a_roles_column_shows_display_forms_and_keeps_the_csv_values(heads_csv):
    rows = _cells(T.render_table({"path": str(heads_csv), "columns": ["seed", "roles"]}))
    assert [r[1] for r in rows[1:]] == ["anti-copying", "positional induction + copying",
                                        "no role", "copying"]
    assert pd.read_csv(heads_csv)["roles"].tolist()[0] == "anti_copying"  # the file unchanged


# ---------------------------------------------------------------- digits

@pytest.mark.parametrize("value, places", [
    (0.5, 3), (2.606, 2), (-0.99958, 2), (0.0009996, 5), (0.000999, 6), (1234.5, 0), (0.0123, 4)])
def test_three_significant_digits_of_the_rounded_number(value, places):
    assert T.decimals(value) == places


def test_the_numbers_beside_a_value_are_shown_at_its_precision():
    row = {"n": 5, "mean": -0.233, "std": 0.1, "min": -0.377, "max": -0.0879}
    assert T.spread_cell(row) == ("−0.233&nbsp;±&nbsp;0.100 <span class='range'>"
                                  "[−0.377,&nbsp;−0.088]</span>")
    # a mean near 0 pads neither its spread nor its range with digits
    row = {"n": 5, "mean": 0.000129, "std": 0.00151, "min": -0.00232, "max": 0.00133}
    assert T.spread_cell(row) == ("0.000129&nbsp;±&nbsp;0.00151 <span class='range'>"
                                  "[−0.00232,&nbsp;0.00133]</span>")
    assert T.companion_places(0.0413, 0.1174) == 3 and T.companion_places(0.0110, 0.00596) == 4
    assert T.companion_places(0.0, 0.5) == 3
