"""The report renderer on a hand-made manifest, and the table helpers it uses."""
import base64
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import ROOT, SCHEMA
from inductionlab.claims.verdicts import evaluate_claims, scorecard
from htmlcheck import external_references, squash
from inductionlab.config import load_config
from inductionlab.report import tables as T
from inductionlab.report.render import STUDY, build_html, write_report


def test_external_references_finds_them():
    """The check itself: each kind of outside reference is caught, data URIs and anchors are not."""
    assert external_references('<img src="data:image/png;base64,AAAA"><a href="#x">x</a>') == []
    for bad in ('<img src="fig.png">', "<img src='/abs/fig.png'>", '<link rel="stylesheet" href="a.css">',
                "<style>body { background: url(a.png) }</style>", '<a href="https://example.org">',
                '<a href="other.html">', "<style>@import 'x.css';</style>"):
        assert external_references(bad), bad


# ---------------------------------------------------------------- fixtures

def _png(path, colour):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1.5, 1))
    fig.add_subplot().plot([0, 1, 2], [1, 0, 1], color=colour)
    fig.savefig(path, dpi=30)
    return path


TRAIN = pd.DataFrame({
    "variant": ["one_layer", "one_layer", "two_layer", "two_layer"],
    "seed": [0, 0, 0, 0],
    "step": [0, 60, 0, 60],
    "val_loss_all": [3.2581, 2.60637, 3.2581, 1.38423],
    "elapsed_s": [0.0, 1.5, 0.0, 2.5],
})
HEADLINE = pd.DataFrame({
    "variant": ["one_layer", "one_layer", "two_layer", "two_layer"],
    "metric": ["loss_all", "acc_pred", "loss_all", "acc_pred"],
    "n": [3, 3, 3, 3],
    "mean": [2.61234, 0.1, 1.38765, 0.6543],
    "std": [0.0123, 0.01, 0.25, 0.05],
    "min": [2.6, 0.09, 1.2, 0.6],
    "max": [2.63, 0.11, 1.7, 0.7],
})
EXTRA = pd.DataFrame({"check": ["study-answer"], "value": [0.4375]})
CLAIMS = [
    {"id": "one_layer.fails_task", "variant": "one_layer", "quote": "Fails at <this> task",
     "write_up": "loss 2.606", "metric": {"table": "behaviour", "where": {"metric": "acc_pred"},
                                          "column": "value"},
     "compare": "<", "threshold": 0.5},
    {"id": "two_layer.absent", "variant": "two_layer", "quote": "Not in any table",
     "write_up": -0.9996, "metric": {"table": "ablations", "column": "value"},
     "compare": ">=", "threshold": 0.9},
]


@pytest.fixture
def manifest(tmp_path):
    """A manifest as report.smk writes it: two variants, three sections, tiny files."""
    config = load_config(ROOT / "config.yaml", SCHEMA)
    train = tmp_path / "train_log.csv"
    TRAIN.to_csv(train, index=False)
    headline = tmp_path / "behaviour_summary.csv"
    HEADLINE.to_csv(headline, index=False)
    extra = tmp_path / "answer.csv"
    EXTRA.to_csv(extra, index=False)
    behaviour = pd.DataFrame({"variant": ["one_layer"] * 2, "seed": [0, 1],
                              "metric": ["acc_pred"] * 2, "value": [0.1, 0.7]})
    card = tmp_path / "scorecard.csv"
    scorecard(CLAIMS, evaluate_claims(CLAIMS, {"behaviour": behaviour}, [0, 1])).to_csv(card, index=False)
    template = tmp_path / "extra.html.j2"
    template.write_text(
        "<p class='custom'>Custom fragment of {{ section.name }} ({{ 'study' if variant is none "
        "else variant }}).</p>\n"
        "{% for t in tables %}{{ t.html | safe }}{% endfor %}\n"
        "{% for f in figures %}<img src=\"{{ f.uri }}\" alt=\"{{ f.caption }}\">{% endfor %}\n")
    figures = {name: _png(tmp_path / f"{name}.png", colour)
               for name, colour in (("one_layer", "red"), ("two_layer", "blue"), ("study", "green"))}
    per_variant = {v: {"tables": [{"path": str(train), "caption": f"Final metrics ({v}).",
                                   "where": {"step": 60}, "columns": ["seed", "val_loss_all"]}],
                       "figures": [{"path": str(figures[v]), "caption": f"Training curve of {v}."}]}
                   for v in ("one_layer", "two_layer")}
    return {
        "title": "Hand-made report",
        "config": config,
        "variants": ["one_layer", "two_layer"],
        "seeds": [0, 1],
        "loss_floor": 1.6291,
        "scorecard": str(card),
        "headline": {"path": str(headline),
                     "spread": {"index": ["variant"], "metrics": ["loss_all", "acc_pred"]}},
        "sections": [
            # listed out of order: the report sorts by (order, name)
            {"name": "heads", "title": "Heads & roles check", "scope": "variant", "order": 40,
             "text": "Only the two-layer model has this section.", "template": None,
             "items": {"two_layer": {"tables": [], "figures": []}}},
            {"name": "extra_study", "title": "Study-wide extra check", "scope": "study", "order": 90,
             "text": "", "template": str(template),
             "items": {STUDY: {"tables": [{"path": str(extra), "caption": "Answer."}],
                               "figures": [{"path": str(figures["study"]), "caption": "Study figure."}]}}},
            {"name": "training", "title": "Training check", "scope": "variant", "order": 10,
             "text": "Validation loss at the last step.", "template": None, "items": per_variant},
        ],
    }


def _chapter(html, name):
    """The HTML of one body chapter (by its first section's name): up to the next chapter,
    study or appendix."""
    start = html.index(f'<section id="chapter-{name}"')
    following = re.compile(r'<section id="(chapter-|study-|appendix-|scorecard|methods)').search(
        html, start + 1)
    return html[start:following.start()]


# ---------------------------------------------------------------- build_html

def test_html_has_titles_chapters_and_sections(manifest):
    html = build_html(manifest)
    assert "<title>Hand-made report</title>" in html
    for title in ("2 Training check", "3 Heads &amp; roles check", "4 Study-wide extra check",
                  "1 Summary: what replicated", "claims scorecard, every seed", "methods"):
        assert title in html, title
    # one chapter per analysis, every model in it; no chapter per model
    assert '<section id="chapter-training" class="chapter">' in html
    assert '<section class="section" id="section-training">' in html
    assert "Model one_layer" not in html
    assert '<section id="study-extra_study" class="analysis">' in html
    assert '<a href="#study-extra_study">4 Study-wide extra check</a>' in html  # contents


def test_sections_follow_their_order_with_the_models_side_by_side(manifest):
    html = build_html(manifest)
    training, heads = _chapter(html, "training"), _chapter(html, "heads")
    assert "Heads &amp; roles check" not in training and "Only the two-layer model" in heads
    assert html.index('id="chapter-training"') < html.index('id="chapter-heads"')  # order 10 < 40
    assert html.index('id="chapter-heads"') < html.index('id="study-extra_study"') < html.index(
        'id="methods"')
    assert "Study-wide extra check" not in training + heads


def test_a_chapter_table_has_a_row_per_model(manifest):
    html = build_html(manifest)
    training = _chapter(html, "training")
    assert T.fmt(2.60637) == "2.61" and T.fmt(1.38423) == "1.38"
    rows = _cells(training)
    # one table for both models: the model first, then the spec's columns with their names
    assert rows[0] == ["model", "seed", "validation loss, all targets (nats)"]
    assert rows[1:] == [["one_layer", "0", "2.61"], ["two_layer", "0", "1.38"]]
    assert training.count("<table>") == 1 and "elapsed_s" not in training
    assert training.count("Validation loss at the last step.") == 1  # section text, once


def test_figures_are_data_uris(manifest):
    html = build_html(manifest)
    def uri(path):
        return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()

    for section in manifest["sections"]:
        for items in section["items"].values():
            for fig in items["figures"]:
                assert f'src="{uri(fig["path"])}"' in html, fig["path"]
    training = {s["name"]: s for s in manifest["sections"]}["training"]["items"]
    chapter = _chapter(html, "training")
    # a figure per model: each once, its caption naming the model
    for v in ("one_layer", "two_layer"):
        assert chapter.count(uri(training[v]["figures"][0]["path"])) == 1
        assert f"{v}: Training curve of {v}." in chapter


def test_a_figure_of_every_model_is_shown_once(manifest, tmp_path):
    both = _png(tmp_path / "both.png", "black")
    for v, items in manifest["sections"][2]["items"].items():
        items["figures"] = [{"path": str(both), "caption": "Every model at once."}]
    chapter = _chapter(build_html(manifest), "training")
    assert chapter.count("<figcaption>Figure 1. Every model at once.</figcaption>") == 1
    assert chapter.count("<figure") == 1


def test_a_section_whose_items_are_all_in_the_appendix_leaves_the_body(manifest):
    for items in manifest["sections"][2]["items"].values():
        for spec in items["tables"] + items["figures"]:
            spec["appendix"] = True
    html = build_html(manifest)
    assert 'id="chapter-training"' not in html
    assert "Validation loss at the last step." not in html  # text goes with its section
    assert html.count("Final metrics (") == 2  # each model's table in its appendix


def test_study_section_uses_its_template(manifest):
    html = build_html(manifest)
    study = html[html.index('<section id="study-extra_study"'):html.index('<section id="methods"')]
    assert "<p class='custom'>Custom fragment of extra_study (study).</p>" in study
    assert "<td>study-answer</td><td>0.438</td>" in study
    assert 'alt="Study figure."' in study


def test_headline_scorecard_and_methods(manifest):
    html = build_html(manifest)
    summary = html[html.index('<section id="summary"'):html.index('<section id="chapter-')]
    card = html[html.index('<section id="scorecard"'):html.index('<section id="methods"')]
    # headline: one row per variant, mean ± std [min, max] per metric, in the listed order
    assert ("<th>model</th><th>loss, all targets (nats)</th>"
            "<th>accuracy, predictable targets</th>") in summary
    # one format: the mean to three significant digits, its spread to the same decimals
    assert "2.61&nbsp;±&nbsp;0.01 <span class='range'>[2.60,&nbsp;2.63]</span>" in summary
    assert "1.39&nbsp;±&nbsp;0.25 <span class='range'>[1.20,&nbsp;1.70]</span>" in summary
    assert "1.629" in summary  # loss floor, 3 decimals
    # scorecard: verdicts, escaped quotes, the write-up's number formatted
    assert "holds in 1 of 2 seeds" in card
    assert "not measured in 2 of 2 seeds" in card
    assert "not measured: no table &#39;ablations&#39;" in card  # the reason, escaped once
    assert "Fails at &lt;this&gt; task" in card
    assert "<td>−0.9996</td>" in card  # the write-up's printed number, with a true minus sign
    assert '<tr class="some">' in card and '<tr class="unmeasured">' in card
    methods = html[html.index('<section id="methods"'):]
    assert "Vocabulary: the 26 letters" in methods
    assert "lr 0.001" in methods


def test_html_has_no_external_references(manifest):
    html = build_html(manifest)
    assert external_references(html) == []
    assert html.count("data:image/png;base64,") == 3


def test_write_report_writes_html_and_pdf(manifest, tmp_path):
    from pypdf import PdfReader

    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    messages = []
    write_report(path, tmp_path / "out" / "report.html", tmp_path / "out" / "report.pdf",
                 log=messages.append)
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Study-wide extra check" in html and external_references(html) == []
    pdf_bytes = (tmp_path / "out" / "report.pdf").read_bytes()
    assert pdf_bytes.startswith(b"%PDF")
    reader = PdfReader(tmp_path / "out" / "report.pdf")
    text = squash("\n".join(page.extract_text() or "" for page in reader.pages))
    for title in ("Hand-made report", "Training check", "Heads & roles check",
                  "Study-wide extra check", "claims scorecard", "methods",
                  "one_layer: Training curve of one_layer.", "holds in 1 of 2 seeds"):
        assert squash(title) in text, title
    for value in ("2.61", "1.38", "study-answer", "0.438"):
        assert value in text, value
    assert len(messages) == 2 and not list((tmp_path / "out").glob(".tmp-*"))


# ---------------------------------------------------------------- tables

@pytest.fixture
def summary_csv(tmp_path):
    path = tmp_path / "summary.csv"
    pd.DataFrame({
        "variant": ["a", "a", "a", "b", "b"],
        "circuit": ["direct", "ov_sum", "ov_sum", "direct", "ov_sum"],
        "layer": [-1, 0, 1, -1, 0],
        "metric": ["positivity_real"] * 5,
        "n": [3, 3, 3, 1, 0],
        "mean": [-0.99876, 0.5, 0.25, -0.5, np.nan],
        "std": [0.001234, 0.1, 0.05, np.nan, np.nan],
        "min": [-0.9999, 0.4, 0.2, -0.5, np.nan],
        "max": [-0.99712, 0.6, 0.3, -0.5, np.nan],
    }).to_csv(path, index=False)
    return path


@pytest.fixture
def heads_csv(tmp_path):
    path = tmp_path / "circuits.csv"
    rows = []
    for variant, shift in (("a", 0.0), ("b", 0.5)):
        for seed in (0, 1):
            for layer, head in ((0, 0), (0, 1), (1, 0)):
                rows.append((variant, seed, "ov", layer, head, round(0.1 * seed + 0.01 * head + 0.3 * layer
                                                                     + shift, 4)))
            rows.append((variant, seed, "qk", 0, 0, -0.123))
    pd.DataFrame(rows, columns=["variant", "seed", "circuit", "layer", "head",
                                "positivity_real"]).to_csv(path, index=False)
    return path


def _cells(html):
    """Rows of an HTML table as lists of cell texts (header row first)."""
    return [re.findall(r"<t[hd]>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", html)]


def test_fmt():
    # one format: three significant digits, true minus signs
    assert T.fmt(2.606371) == "2.61"
    assert T.fmt(-0.99958491) == "−1.00"  # three significant digits of the rounded number
    assert T.fmt(-0.9949) == "−0.995"
    assert T.fmt(1234.5678) == "1235"
    assert T.fmt(0.0) == "0"
    assert T.fmt(0.000123456) == "0.000123"
    assert T.fmt(-0.0000001) == "−0.000000100"
    assert T.fmt(float("nan")) == "–"
    assert T.fmt(float("inf")) == "∞"
    assert T.fmt(np.float64(0.123456)) == "0.123"
    assert T.fmt(3) == "3"
    assert T.fmt("a<b & c") == "a&lt;b &amp; c"


def test_render_table_where(heads_csv):
    html = T.render_table({"path": str(heads_csv), "where": {"circuit": "qk"}})
    rows = _cells(html)
    assert rows[0] == ["model", "seed", "circuit", "layer", "head", "eigenvalue positivity Σλ/Σ|λ|"]
    assert len(rows) == 1 + 4 and {r[2] for r in rows[1:]} == {"qk"}
    html = T.render_table({"path": str(heads_csv), "where": {"circuit": "ov", "head": [1], "layer": [0, 1]}},
                          variant="b")
    rows = _cells(html)
    assert rows[0] == ["seed", "circuit", "layer", "head", "eigenvalue positivity Σλ/Σ|λ|"]  # variant dropped
    assert [r[4] for r in rows[1:]] == ["0.510", "0.610"]


def test_render_table_spread(summary_csv):
    html = T.render_table({"path": str(summary_csv), "where": {"metric": "positivity_real"},
                           "spread": {"index": ["circuit", "layer"], "metrics": ["positivity_real"]}},
                          variant="a")
    rows = _cells(html)
    assert rows[0] == ["circuit", "layer", "eigenvalue positivity Σλ/Σ|λ|"]
    # the mean to three significant digits, std, min and max to the same decimals (or their
    # own three significant digits where fewer: −0.9999 is −1.00); the direct path's layer
    # -1 (not applicable) as an en dash
    assert rows[1] == ["direct", "–", "−0.999&nbsp;±&nbsp;0.001 <span class='range'>[−1.00,&nbsp;−0.997]</span>"]
    assert rows[2] == ["ov_sum", "0", "0.500&nbsp;±&nbsp;0.100 <span class='range'>[0.400,&nbsp;0.600]</span>"]
    assert rows[3] == ["ov_sum", "1", "0.250&nbsp;±&nbsp;0.050 <span class='range'>[0.200,&nbsp;0.300]</span>"]
    # one seed: just the value; a row without any value (n = 0) is left out
    rows = _cells(T.render_table({"path": str(summary_csv), "spread": {"index": ["circuit", "layer"]}},
                                 variant="b"))
    assert rows[1:] == [["direct", "–", "−0.500"]]


def test_render_table_spread_per_metric_and_missing_metric(tmp_path):
    path = tmp_path / "behaviour_summary.csv"
    HEADLINE.iloc[:3].to_csv(path, index=False)  # two_layer has no acc_pred
    rows = _cells(T.render_table({"path": str(path), "spread": {"index": ["metric"]}}, variant="one_layer"))
    assert rows[0] == ["metric", "mean ± std [min, max] over seeds"]
    assert [r[0] for r in rows[1:]] == ["loss, all targets (nats)", "accuracy, predictable targets"]
    rows = _cells(T.render_table({"path": str(path), "spread": {"index": ["variant"],
                                                                "metrics": ["acc_pred", "loss_all"]}}))
    assert rows[0] == ["model", "accuracy, predictable targets", "loss, all targets (nats)"]  # the listed order
    assert rows[2][0] == "two_layer" and rows[2][1] == "–"


def test_render_table_pivot_with_label(heads_csv):
    spec = {"path": str(heads_csv), "where": {"circuit": "ov"},
            "pivot": {"index": ["seed"], "columns": ["layer", "head"], "values": "positivity_real",
                      "label": "OV L{}H{}"}}
    rows = _cells(T.render_table(spec, variant="a"))
    assert rows[0] == ["seed", "OV L0H0", "OV L0H1", "OV L1H0"]
    assert rows[1:] == [["0", "0", "0.0100", "0.300"], ["1", "0.100", "0.110", "0.400"]]
    # no label: the bare column key
    spec["pivot"] = {"index": ["seed"], "columns": "head", "values": "positivity_real"}
    spec["where"] = {"circuit": "ov", "layer": 0}
    assert _cells(T.render_table(spec, variant="b"))[0] == ["seed", "0", "1"]


def test_render_table_sort_columns_and_max_rows(heads_csv):
    spec = {"path": str(heads_csv), "where": {"circuit": "ov"},
            "sort": {"by": "positivity_real", "ascending": False},
            "columns": ["positivity_real", "layer", "head", "no_such_column"], "max_rows": 2}
    rows = _cells(T.render_table(spec, variant="a"))
    assert rows == [["eigenvalue positivity Σλ/Σ|λ|", "layer", "head"], ["0.400", "1", "0"], ["0.300", "1", "0"]]
    spec["sort"] = {"by": ["layer", "positivity_real"]}  # ascending by default
    spec["max_rows"] = 3
    rows = _cells(T.render_table(spec, variant="a"))
    assert [r[0] for r in rows[1:]] == ["0", "0.0100", "0.100"]
    # columns may keep the variant
    spec["columns"] = ["variant", "seed"]
    assert _cells(T.render_table(spec, variant="b"))[1] == ["b", "0"]


def test_render_table_without_rows(heads_csv):
    # nothing to show: left out, unless the table says why it is empty
    assert T.render_table({"path": str(heads_csv), "where": {"circuit": "direct"}}) == ""
    assert T.render_table({"path": str(heads_csv)}, variant="no_such_variant") == ""
    html = T.render_table({"path": str(heads_csv), "where": {"circuit": "direct"}, "empty": "None."})
    assert "<table" not in html and "class='empty'" in html and "None." in html


def test_mark_completion():
    marked = T.mark_completion("ABXD", "ABCD")
    assert marked == ("<span class='letters'><span class='ok'>A</span><span class='ok'>B</span>"
                      "<span class='bad'>X</span><span class='ok'>D</span></span>")
    # letters beyond the correct completion are wrong
    marked = T.mark_completion("ABC", "AB")
    assert re.findall(r"class='(ok|bad)'>(.)<", marked) == [("ok", "A"), ("ok", "B"), ("bad", "C")]
    # no correct completion (out of distribution): letters unmarked
    for expected in (None, math.nan, ""):
        assert T.mark_completion("ABC", expected) == "<span class='letters'>ABC</span>"
    assert "&lt;" in T.mark_completion("<", "<") and "&lt;" in T.mark_completion("<", None)


def test_title_page_lists_the_training_devices_and_torch_versions(tmp_path):
    from inductionlab.report.render import training_environment

    log = tmp_path / "train_log.csv"
    pd.DataFrame({"device": ["cpu", "cuda:0 (GPU X)", "cpu"],
                  "torch": ["2.13.0", "2.13.0", "2.13.0"]}).to_csv(log, index=False)
    assert training_environment(log) == {"Training device": "cpu, cuda:0 (GPU X)",
                                         "Training torch": "2.13.0"}
    assert training_environment(tmp_path / "missing.csv") == {}


def test_appendix_items(manifest):
    training = {s["name"]: s for s in manifest["sections"]}["training"]["items"]
    for v, items in training.items():
        items["tables"][0]["appendix"] = True
        items["figures"].append({**items["figures"][0], "appendix": ["two_layer"],
                                 "caption": "Only two_layer's copy goes to the appendix."})
    html = build_html(manifest)
    chapter = _chapter(html, "training")
    appendix = html[html.index('<section id="appendix-one_layer"'):html.index('<section id="methods"')]
    # a table flagged appendix is in the appendix only; a list of variants keeps the
    # figure in the body for every other model
    assert "Final metrics (one_layer)." in appendix and "Final metrics (" not in chapter
    assert "one_layer: Only two_layer&#39;s copy goes to the appendix." in chapter
    assert "two_layer: Only two_layer&#39;s copy" not in chapter
    assert "Appendix A: per-seed detail of one_layer" in html
    assert "per-seed detail of two_layer" in html


def test_render_table_across_models(heads_csv, tmp_path):
    # a list of models: a model column first, rows in the list's order, max_rows per model
    spec = {"path": str(heads_csv), "where": {"circuit": "ov"}, "columns": ["seed", "head"],
            "max_rows": 2}
    rows = _cells(T.render_table(spec, ["b", "a"]))
    assert rows[0] == ["model", "seed", "head"]
    assert [r[0] for r in rows[1:]] == ["b", "b", "a", "a"]
    # rank across models: the model is a key of the ranks; top keeps the first ranks
    ranked = {"path": str(heads_csv), "where": {"circuit": "ov"},
              "rank": {"within": ["seed", "layer"], "by": "positivity_real",
                       "values": ["positivity_real"], "top": 1}}
    rows = _cells(T.render_table(ranked, ["a", "b"]))
    assert rows[0][:3] == ["model", "layer", "rank"]
    assert [r[:3] for r in rows[1:]] == [["a", "0", "1"], ["a", "1", "1"], ["b", "0", "1"], ["b", "1", "1"]]
    # one row per metric: the models become columns, named as they are
    path = tmp_path / "behaviour_summary.csv"
    pd.DataFrame({"variant": ["a_model", "a_model", "b_model"], "metric": ["acc_pred", "loss_all", "acc_pred"],
                  "n": [2, 2, 2], "mean": [0.5, 2.0, 0.25], "std": [0.1, 0.2, 0.05],
                  "min": [0.4, 1.8, 0.2], "max": [0.6, 2.2, 0.3]}).to_csv(path, index=False)
    html = T.render_table({"path": str(path), "spread": {"index": ["metric"]}}, ["b_model", "a_model"])
    assert "<th>metric</th><th>b_&#8203;model</th><th>a_&#8203;model</th>" in html
    assert html.count("<tr>") == 3  # header, acc_pred, loss_all
