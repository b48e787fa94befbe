"""The real ``snakemake`` command on the tiny config, in a temporary folder."""
import base64
import html as html_module
import json
import re
import subprocess
import sys

import pandas as pd
import pytest
import torch
import yaml

from conftest import ROOT
from htmlcheck import external_references, squash
from inductionlab.report.tables import fmt
from inductionlab.train import load_model
from inductionlab.weights import model_from_weights

VARIANTS = ("one_layer", "one_layer_smeared", "two_layer")
EXTRA_STAGE = ROOT / "tests" / "extra_stage.smk"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One real run of the workflow on the tiny config, with the test-only extra stage."""
    work = tmp_path_factory.mktemp("tiny")
    config = yaml.safe_load((ROOT / "tests" / "config.tiny.yaml").read_text())
    config["extra_rules"] = [str(EXTRA_STAGE)]
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--cores", "2",
         "-d", str(work)], cwd=work, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return work


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_model_has_its_outputs(tiny_run, variant):
    folder = tiny_run / "results" / variant / "seed0"
    for name in ("spec.json", "model.pt", "train_log.csv", "weights.npz", "circuits.csv",
                 "composition.csv", "eigenvalues.npz", "completions.csv", "failure_modes.csv",
                 "attention.npz", "head_scores.csv", "behaviour.csv",
                 "figures/attention/mean.png", "figures/attention/prompt1_ABCDEFABCDEF.png"):
        assert (folder / name).is_file(), name
    assert (folder / "checkpoints" / "step000000.pt").is_file()
    assert (tiny_run / "logs" / "train" / variant / "seed0.log").read_text().strip()
    assert json.loads((folder / "spec.json").read_text())["variant"] == variant
    assert pd.read_csv(folder / "train_log.csv")["step"].iloc[-1] == 60


@pytest.mark.parametrize("variant", VARIANTS)
def test_rebuilt_model_matches_trained_model(tiny_run, variant):
    folder = tiny_run / "results" / variant / "seed0"
    trained, _ = load_model(folder / "model.pt")
    rebuilt = model_from_weights(folder / "weights.npz")
    tokens = torch.randint(0, 26, (8, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(rebuilt(tokens), trained(tokens))


def test_tables_name_their_model(tiny_run):
    folder = tiny_run / "results" / "two_layer" / "seed0"
    for name in ("circuits.csv", "composition.csv", "completions.csv", "failure_modes.csv",
                 "head_scores.csv", "behaviour.csv"):
        frame = pd.read_csv(folder / name)
        assert (frame["variant"] == "two_layer").all() and (frame["seed"] == 0).all(), name
    assert len(pd.read_csv(folder / "failure_modes.csv")) == 203
    assert len(pd.read_csv(folder / "composition.csv")) == 3 * 4 * 4
    assert len(pd.read_csv(folder / "head_scores.csv")) == 8


def test_second_run_has_nothing_to_do(tiny_run):
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--cores", "1",
         "-n", "-d", str(tiny_run)], cwd=tiny_run, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


# ---------------------------------------------------------------- report, end to end

@pytest.fixture(scope="module")
def report_files(tiny_run):
    """(HTML text, squashed PDF text, manifest) of the tiny run's report."""
    from pypdf import PdfReader

    html = (tiny_run / "reports" / "report.html").read_text()
    reader = PdfReader(tiny_run / "reports" / "report.pdf")
    pdf = squash("\n".join(page.extract_text() or "" for page in reader.pages))
    manifest = json.loads((tiny_run / "results" / "report" / "manifest.json").read_text())
    return html, pdf, manifest


def test_report_files_exist(tiny_run):
    for name in ("report.html", "report.pdf"):
        path = tiny_run / "reports" / name
        assert path.is_file() and path.stat().st_size > 0, name
    assert (tiny_run / "reports" / "report.pdf").read_bytes().startswith(b"%PDF")


def test_extra_stage_is_registered_and_run(tiny_run, report_files):
    _, _, manifest = report_files
    extra = [s for s in manifest["sections"] if s["name"] == "extra_check"]
    assert len(extra) == 1
    assert extra[0]["title"] == "Extra stage check" and extra[0]["scope"] == "study"
    assert list(extra[0]["items"]) == ["_study"]
    answer = pd.read_csv(tiny_run / "results" / "extra" / "answer.csv")
    assert answer["check"].tolist() == ["extra-stage-answer"]
    assert (tiny_run / "results" / "extra" / "answer.png").read_bytes().startswith(b"\x89PNG")


def test_pdf_has_every_section_heading(report_files):
    _, pdf, manifest = report_files
    titles = {s["title"] for s in manifest["sections"]}
    assert "Extra stage check" in titles and len(titles) >= 7
    for title in sorted(titles) + ["Claims scorecard", "Methods appendix",
                                   "Summary and claims scorecard"]:
        assert squash(title) in pdf, title
    for variant in VARIANTS:
        assert squash(f"Variant {variant}") in pdf, variant


def test_html_has_every_section_and_the_extra_stage(tiny_run, report_files):
    html, _, manifest = report_files
    for s in manifest["sections"]:
        assert s["title"] in html or s["title"].replace("&", "&amp;") in html, s["title"]
    assert "Extra stage check" in html and 'id="study-extra_check"' in html
    png = base64.b64encode((tiny_run / "results" / "extra" / "answer.png").read_bytes()).decode()
    assert "data:image/png;base64," + png in html


def test_html_has_noexternal_references(report_files):
    html, _, _ = report_files
    assert external_references(html) == []
    assert html.count("data:image/png;base64,") >= 3


def _final_rows(tiny_run, table):
    frame = pd.read_csv(tiny_run / "results" / "tables" / f"{table}.csv")
    return frame[frame["seed"] == 0]


def test_pdf_shows_a_value_of_every_table(tiny_run, report_files):
    _, pdf, _ = report_files
    steps = yaml.safe_load((ROOT / "tests" / "config.tiny.yaml").read_text())["train"]["steps"]
    expected = {}
    train_log = _final_rows(tiny_run, "train_log")
    circuits = _final_rows(tiny_run, "circuits")
    head_scores = _final_rows(tiny_run, "head_scores")
    behaviour = pd.read_csv(tiny_run / "results" / "tables" / "behaviour_summary.csv")
    failure = pd.read_csv(tiny_run / "results" / "tables" / "failure_modes_summary.csv")
    for variant in VARIANTS:
        log = train_log[(train_log["variant"] == variant) & (train_log["step"] == steps)]
        expected[f"train_log {variant}"] = fmt(log["val_loss_all"].iloc[0])
        ov = circuits[(circuits["variant"] == variant) & (circuits["circuit"] == "ov")
                      & (circuits["layer"] == 0) & (circuits["head"] == 0)]
        expected[f"circuits ov {variant}"] = fmt(ov["positivity_real"].iloc[0])
        direct = circuits[(circuits["variant"] == variant) & (circuits["circuit"] == "direct")]
        expected[f"circuits direct {variant}"] = fmt(direct["positivity_real"].iloc[0])
        hs = head_scores[(head_scores["variant"] == variant) & (head_scores["layer"] == 0)
                         & (head_scores["head"] == 0)]
        expected[f"head_scores {variant}"] = fmt(hs["previous_token"].iloc[0])
        loss = behaviour[(behaviour["variant"] == variant) & (behaviour["metric"] == "loss_all")]
        expected[f"behaviour {variant}"] = fmt(loss["mean"].iloc[0])
        tf = failure[(failure["variant"] == variant) & (failure["metric"] == "teacher_forced_acc")]
        expected[f"failure_modes {variant}"] = fmt(tf["mean"].min())
    composition = _final_rows(tiny_run, "composition")
    k = composition[(composition["variant"] == "two_layer") & (composition["kind"] == "K")
                    & (composition["layer"] == 1) & (composition["head"] == 0)
                    & (composition["src_layer"] == 0) & (composition["src_head"] == 0)]
    expected["composition two_layer"] = fmt(k["positivity_real"].iloc[0])
    completions = _final_rows(tiny_run, "completions")
    row = completions[(completions["variant"] == "two_layer")
                      & (completions["prompt"] == "ABCDEFABCDEF")].iloc[0]
    expected["completion two_layer"] = row["completion"]
    scorecard = pd.read_csv(tiny_run / "results" / "tables" / "scorecard.csv")
    expected["scorecard claim"] = scorecard["claim"].iloc[0]
    expected["scorecard verdict"] = scorecard["verdict"].iloc[0]
    ablations = pd.read_csv(tiny_run / "results" / "tables" / "ablations_summary.csv")
    for variant in VARIANTS:
        base = ablations[(ablations["variant"] == variant) & (ablations["ablation"] == "baseline")
                         & (ablations["metric"] == "loss_all")]
        expected[f"ablations {variant}"] = fmt(base["mean"].iloc[0])
    phase = pd.read_csv(tiny_run / "results" / "tables" / "phase_change.csv")
    for metric in phase["metric"].unique():
        expected[f"phase_change {metric}"] = metric
    pca = pd.read_csv(tiny_run / "results" / "tables" / "per_token_loss_pca.csv")
    expected["per_token_loss_pca"] = fmt(pca["explained_variance_PC1"].iloc[0])
    expected["extra stage"] = "extra-stage-answer"
    expected["extra stage value"] = fmt(0.4375)
    missing = {name: value for name, value in expected.items() if squash(value) not in pdf}
    assert missing == {}
    assert squash("OV L0H0") in pdf and squash("QK L0H0") in pdf


def _first_value(table_html: str) -> str | None:
    """The text of the first cell of a rendered table that shows a decimal number."""
    for cell in re.findall(r"<td>(.*?)</td>", table_html):
        text = html_module.unescape(re.sub(r"<[^>]+>", "", cell))
        if re.search(r"\d\.\d", text):
            return text
    return None


def test_pdf_shows_every_registered_table(tiny_run, report_files, monkeypatch):
    """Each table of each default-rendered section: its first decimal value is in the PDF."""
    from inductionlab.report.tables import render_table

    _, pdf, manifest = report_files
    monkeypatch.chdir(tiny_run)  # the manifest's paths are relative to the run folder
    checked, missing = [], []
    for section in manifest["sections"]:
        if section["template"]:
            continue
        for key, items in section["items"].items():
            for k, spec in enumerate(items["tables"]):
                value = _first_value(render_table(spec, None if key == "_study" else key))
                if value is None:
                    continue
                checked.append((section["name"], key, k))
                if squash(value) not in pdf:
                    missing.append((section["name"], key, k, value))
    assert missing == []
    assert {name for name, _, _ in checked} >= {"training", "circuits", "attention", "extra_check"}


def test_pdf_and_html_name_the_extra_stage(report_files):
    html, pdf, _ = report_files
    assert "Extra stage check" in html
    assert squash("Extra stage check") in pdf
    assert "extra-stage-answer" in html


def test_claims_are_evaluated_for_every_seed(tiny_run):
    from inductionlab.claims import load_claims

    claims = load_claims(ROOT / "workflow" / "claims.yaml")
    results = pd.read_csv(tiny_run / "results" / "tables" / "claims.csv")
    assert sorted(results["claim"]) == sorted(c["id"] for c in claims)  # one seed
    assert set(results["status"]) <= {"holds", "fails", "not measured"}
    assert (results.loc[results["status"] == "not measured", "value"].isna()).all()
    scorecard = pd.read_csv(tiny_run / "results" / "tables" / "scorecard.csv")
    assert scorecard["claim"].tolist() == [c["id"] for c in claims]
    assert scorecard["verdict"].str.startswith("holds in ").all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_dynamics_and_ablation_outputs_exist(tiny_run, variant):
    folder = tiny_run / "results" / variant / "seed0"
    for name in ("dynamics.csv", "per_token_losses.npz", "phase_change.csv", "ablations.csv",
                 "ablated_attention.npz"):
        assert (folder / name).is_file(), name
    assert (folder / "figures" / "dynamics").is_dir()
    assert not pd.read_csv(folder / "dynamics.csv").empty
    ablations = pd.read_csv(folder / "ablations.csv")
    assert ablations["ablation"].iloc[0] == "baseline"


def test_study_level_dynamics_tables_exist(tiny_run):
    tables = tiny_run / "results" / "tables"
    for name in ("per_token_loss_pca.csv", "phase_change.csv"):
        assert not pd.read_csv(tables / name).empty, name
    assert (tiny_run / "results" / "figures" / "per_token_loss_pca.png").is_file()
