"""The real ``snakemake`` command on the tiny config, in a temporary folder."""
import base64
import html as html_module
import json
import re
import subprocess
import sys

import markupsafe
import pandas as pd
import pytest
import torch
import yaml

from helpers import ROOT
from htmlcheck import external_references, squash
from inductionlab.formatting.labels import value_label
from inductionlab.report.tables import fmt
from inductionlab.core.loading import load_model
from inductionlab.core.weights import model_from_weights

pytestmark = pytest.mark.e2e  # the end-to-end tests: python -m pytest -m 'not e2e' runs the rest

# three_layer is a variant added by config only: every stage runs on it unchanged.
VARIANTS = ("one_layer", "one_layer_smeared", "two_layer", "three_layer")

# `tiny_run` (the real workflow on the tiny config) is a session fixture in conftest.py,
# shared with the SLURM end-to-end test.


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


def test_tables_and_report_text_are_the_snapshot_s(tiny_run):
    """A change that only reorganises the code leaves every table and the report's text as
    they were (tests/snapshot.py says how to write the snapshot again when results move on
    purpose)."""
    from snapshot import SNAPSHOT, cpu_kind, differences, snapshot

    if not SNAPSHOT.exists():
        pytest.skip(f"no snapshot of the tiny run recorded for this kind of CPU ({cpu_kind()})")
    assert differences(snapshot(tiny_run), json.loads(SNAPSHOT.read_text())) == []


def test_a_kind_of_cpu_is_compared_against_its_own_snapshot_else_the_first(monkeypatch):
    import snapshot

    monkeypatch.setattr(snapshot, "cpu_kind", lambda: "NoVendor-NONE")
    assert snapshot.snapshot_path() == snapshot.SNAPSHOTS / "tiny_run.json"
    own = next(snapshot.SNAPSHOTS.glob("tiny_run.*-*.json"))
    monkeypatch.setattr(snapshot, "cpu_kind", lambda: own.name[len("tiny_run."):-len(".json")])
    assert snapshot.snapshot_path() == own


def test_second_run_has_nothing_to_do(tiny_run):
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--cores", "1",
         "-n", "-d", str(tiny_run)], cwd=tiny_run, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_a_deleted_figure_of_the_report_is_named_and_rebuilt_by_snakemake(tiny_run, tmp_path):
    # Snakemake takes an output whose input was deleted for up to date unless the output's
    # job runs anyway: asked for the report alone, it says so; `snakemake` rebuilds both
    import shutil

    from helpers import snakemake_command

    work = tmp_path / "run"
    shutil.copytree(tiny_run, work, symlinks=True)
    (work / "results" / "figures" / "two_layer" / "training.png").unlink()
    outs = {}
    for target in (["reports/report.html"], []):
        proc = subprocess.run(snakemake_command(work, "--cores", "1", "-n", *target),
                              cwd=work, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs[bool(target)] = proc.stdout + proc.stderr
    note = ("inductionlab: 1 file(s) the report shows are missing "
            "(results/figures/two_layer/training.png); `snakemake` rebuilds them")
    assert note in outs[True] and note in outs[False], outs[True][-3000:]
    assert "Missing output files: results/figures/two_layer/training.png" in outs[False]
    assert re.search(r"^report\s+1$", outs[False], re.M), outs[False][-3000:]


def _jobs_after(tiny_run, tmp_path, change: dict) -> dict:
    """rule -> jobs that ``snakemake -n`` lists on the finished tiny run with ``change``
    (a config overlay) given by --configfile."""
    from helpers import snakemake_command

    overlay = tmp_path / "change.yaml"
    overlay.write_text(yaml.safe_dump(change))
    proc = subprocess.run(snakemake_command(tiny_run, "--cores", "1", "-n", "--configfile", overlay),
                          cwd=tiny_run, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = (proc.stdout + proc.stderr).split("Job stats:")[1].split("total")[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", stats, re.M)}


# Jobs that never read the head-role thresholds or the roles they give.
ANALYSES = {"train", "analyse", "positional_shortcut_analysis"}


def test_a_role_threshold_reruns_only_the_jobs_that_apply_the_rule(tiny_run, tmp_path):
    jobs = _jobs_after(tiny_run, tmp_path, {"behaviour": {"roles": {"times_chance": 3.0}}})
    assert not set(jobs) & ANALYSES, jobs
    # the rule's settings file; the two tables it decides (head roles, whether induction
    # formed), stacked again; what reads the roles from them: the offset attribution (its
    # head groups) with its two tables, the formation study, the readings, claims, figures,
    # the report
    assert set(jobs) <= {"stage_settings", "aggregate", "claims", "figures", "dynamics_figures",
                         "offsets", "formation_table", "formation_answers", "readings",
                         "report_manifest", "report", "all"}, jobs
    # stacked again: head_scores and phase_change (the rule), offset_profile and
    # algorithm_fit (the offsets), formation
    assert jobs["stage_settings"] == 1 and jobs["aggregate"] == 5 and jobs["claims"] == 1, jobs


def test_the_evaluation_sample_reruns_the_analyses(tiny_run, tmp_path):
    jobs = _jobs_after(tiny_run, tmp_path, {"behaviour": {"n_sequences": 128}})
    # the model's analyses (behaviour, ablations, dynamics: one job) and the offsets
    assert {"analyse", "offsets"} <= set(jobs), jobs
    assert "train" not in jobs, jobs


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
    for title in sorted(titles) + ["claims scorecard, every seed", "methods", "1 Summary: what replicated",
                                   "Beyond the write-up"]:
        assert squash(title) in pdf, title
    for chapter in {s["chapter"] for s in manifest["sections"] if s["scope"] == "variant"}:
        assert squash(chapter) in pdf, chapter  # one chapter per analysis
    for variant in VARIANTS:
        assert squash(f"Model {variant}") not in pdf, variant  # no chapter per model
        assert squash(f"per-seed detail of {variant}") in pdf, variant


def test_html_has_every_section_and_the_extra_stage(tiny_run, report_files):
    html, _, manifest = report_files
    for s in manifest["sections"]:
        assert str(markupsafe.escape(s["title"])) in html, s["title"]  # as jinja2 escapes it
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
        expected[f"phase_change {metric}"] = value_label("metric", metric)
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
    assert {name for name, _, _ in checked} >= {"training", "circuits", "attention", "extra_check",
                                                "positional_shortcut"}


def test_pdf_and_html_name_the_extra_stage(report_files):
    html, pdf, _ = report_files
    assert "Extra stage check" in html
    assert squash("Extra stage check") in pdf
    assert "extra-stage-answer" in html


def test_every_table_holds_exactly_the_columns_of_its_format(tiny_run):
    """Each stacked table a stage wrote has every column its format declares, and no
    column the format does not (the formats are what the figures and claims read)."""
    from inductionlab import experiments
    from inductionlab.stages.tables import ID_COLUMNS, declared

    experiments.available()
    checked = []
    for path in sorted((tiny_run / "results" / "tables").glob("*.csv")):
        fmt = declared().get(path.stem)
        if fmt is None:
            continue
        columns = list(pd.read_csv(path, nrows=1).columns)
        assert [c for c in fmt.columns if c not in columns] == [], path.stem
        assert [c for c in columns if c not in ID_COLUMNS and not fmt.has(c)] == [], path.stem
        checked.append(path.stem)
    assert {"train_log", "head_scores", "ablations", "dynamics", "phase_change", "behaviour",
            "failure_modes", "completions", "circuits", "composition", "offset_profile",
            "algorithm_fit", "positional_shortcut_offsets"} <= set(checked)


def test_claims_are_evaluated_for_every_seed(tiny_run):
    from inductionlab import experiments
    from inductionlab.claims.verdicts import load_claims

    claims = load_claims(ROOT / "workflow" / "claims.yaml",
                         [experiments.available()["positional_shortcut"].claims])
    results = pd.read_csv(tiny_run / "results" / "tables" / "claims.csv")
    results = results[results["family"] == "write_up"]  # the study's family: its own test
    assert sorted(results["claim"]) == sorted(c["id"] for c in claims)  # one seed
    assert set(results["status"]) <= {"holds", "fails", "too close to call", "not measured"}
    decided = results[results["status"].isin(["holds", "fails"]) & results["low"].notna()]
    assert ((decided["low"] <= decided["value"] + 1e-9) & (decided["value"] <= decided["high"] + 1e-9)).all()
    assert (results.loc[results["status"] == "not measured", "value"].isna()).all()
    scorecard = pd.read_csv(tiny_run / "results" / "tables" / "scorecard.csv")
    scorecard = scorecard[scorecard["family"] == "write_up"]
    assert scorecard["claim"].tolist() == [c["id"] for c in claims]
    assert scorecard["verdict"].str.fullmatch(
        r"(holds in \d+ of 1 seeds( \(1 (too close to call|not measured)\))?|not measured in 1 of 1 seeds)").all()
    unmeasured = scorecard[scorecard["measured"] == 0]
    assert unmeasured["notes"].str.startswith("not measured: ").all()  # every one says why


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


# ---------------------------------------------------------------- three layers, by config only

def test_three_layer_model_has_every_layer_in_its_tables(tiny_run):
    folder = tiny_run / "results" / "three_layer" / "seed0"
    composition = pd.read_csv(folder / "composition.csv")
    pairs = set(map(tuple, composition[["src_layer", "layer"]].drop_duplicates().values.tolist()))
    assert pairs == {(0, 1), (0, 2), (1, 2)}  # every earlier layer with every later one
    assert len(composition) == 3 * 3 * 4 * 4
    circuits = pd.read_csv(folder / "circuits.csv")
    assert sorted(circuits.loc[circuits["circuit"] == "ov_sum", "layer"]) == [0, 1, 2]
    assert sorted(pd.read_csv(folder / "head_scores.csv")["layer"].unique()) == [0, 1, 2]
    ablations = pd.read_csv(folder / "ablations.csv")
    assert {"qk_from_embedding_L1", "qk_from_embedding_L2", "plus_k_L2",
            "values_from_embedding_L2"} <= set(ablations["ablation"])
    ran = ablations[ablations["kind"] != "smear_off"]  # the one kind this model lacks
    assert (ran["status"] == "ok").all() and ablations["status"].str.startswith("skipped").sum() == 1
    assert {"induction_mean_L2", "first_block_chance_L2"} <= set(ablations.columns)
    dynamics = pd.read_csv(folder / "dynamics.csv")
    assert 2 in set(dynamics.loc[dynamics["metric"] == "induction", "layer"])


# ---------------------------------------------------------------- the positional-shortcut experiment

SHORTCUT_MODELS = ["one_layer_learned", "one_layer", "one_layer_smeared"]
STUDY_MODELS = {"one_layer": "one_layer_standard", "one_layer_smeared": "one_layer_smeared_standard",
                "two_layer": "two_layer_standard"}


def test_positional_shortcut_trains_the_learned_table_model(tiny_run):
    folder = tiny_run / "results" / "one_layer_learned" / "seed0"  # a registered model
    spec = json.loads((folder / "spec.json").read_text())
    assert spec["variant"] == "one_layer_learned" and spec["model"]["pos_encoding"] == "learned"
    assert spec["model"]["n_layers"] == 1
    model, _ = load_model(folder / "model.pt")
    assert model.cfg.pos_encoding == "learned"
    from inductionlab.core.model import sinusoidal_table

    assert not torch.equal(model.pos.detach(), sinusoidal_table(24, 8, "learned"))  # trained
    assert (folder / "checkpoints" / "step000000.pt").is_file()
    assert pd.read_csv(folder / "train_log.csv")["step"].iloc[-1] == 60
    # trained and analysed by the generic stages, like a variant
    assert (tiny_run / "logs" / "train" / "one_layer_learned" / "seed0.log").is_file()
    for name in ("weights.npz", "circuits.csv", "behaviour.csv", "ablations.csv", "dynamics.csv"):
        assert (folder / name).is_file(), name


def test_positional_shortcut_compares_the_configured_variants_that_exist(tiny_run):
    tables = tiny_run / "results" / "tables"
    metrics = pd.read_csv(tables / "positional_shortcut.csv")
    assert list(dict.fromkeys(metrics["variant"])) == SHORTCUT_MODELS  # four_layer skipped
    assert not (tiny_run / "results" / "four_layer").exists()
    for name in ("positional_shortcut_offsets", "positional_shortcut_completions",
                 "positional_shortcut_positions"):
        frame = pd.read_csv(tables / f"{name}.csv")
        assert set(frame["variant"]) == set(SHORTCUT_MODELS) and set(frame["seed"]) == {0}, name
        assert (tables / f"{name}_summary.csv").is_file()
    # the compared models are the main pipeline's: their validation loss is their training log's
    value = metrics.set_index(["variant", "metric"])["value"]
    for variant, log in (("one_layer", tiny_run / "results" / "one_layer" / "seed0" / "train_log.csv"),
                         ("one_layer_learned", tiny_run / "results" / "one_layer_learned" / "seed0"
                          / "train_log.csv")):
        assert value[variant, "loss_all"] == pytest.approx(pd.read_csv(log)["val_loss_all"].iloc[-1],
                                                           rel=1e-5), variant
    positions = pd.read_csv(tables / "positional_shortcut_positions.csv")
    assert positions.groupby(["variant", "query"])["is_row_argmax"].sum().eq(1.0).all()


def test_positional_shortcut_section_is_in_the_html_and_the_pdf(tiny_run, report_files):
    html, pdf, manifest = report_files
    sections = [s for s in manifest["sections"] if s["name"] == "positional_shortcut"]
    assert len(sections) == 1 and sections[0]["scope"] == "study"
    title = sections[0]["title"]
    assert "four_layer: not in this run's variants" in sections[0]["text"]
    assert title in html and 'id="study-positional_shortcut"' in html
    assert squash(title) in pdf
    summary = pd.read_csv(tiny_run / "results" / "tables" / "positional_shortcut_summary.csv")
    row = summary[(summary["variant"] == "one_layer_learned") & (summary["metric"] == "loss_all")]
    value = fmt(float(row["mean"].iloc[0]))
    assert value in html and squash(value) in pdf
    for figure in ("positional_shortcut_offsets.png", "positional_shortcut_positions.png"):
        png = (tiny_run / "results" / "figures" / "study" / figure).read_bytes()
        assert "data:image/png;base64," + base64.b64encode(png).decode() in html, figure


# ---------------------------------------------------------------- the positional-table study

def test_positional_table_study_trains_registered_models(tiny_run):
    """Three models derived from the variants, trained and analysed by the generic rules."""
    for base, name in STUDY_MODELS.items():
        folder = tiny_run / "results" / name / "seed0"
        spec = json.loads((folder / "spec.json").read_text())
        base_spec = json.loads((tiny_run / "results" / base / "seed0" / "spec.json").read_text())
        assert spec["variant"] == name and spec["model"]["pos_encoding"] == "standard"
        assert {**spec["model"], "pos_encoding": "original"} == base_spec["model"]
        assert load_model(folder / "model.pt")[0].cfg.pos_encoding == "standard"
        for table in ("behaviour.csv", "head_scores.csv", "ablations.csv", "phase_change.csv"):
            assert (folder / table).is_file(), (name, table)
    behaviour = pd.read_csv(tiny_run / "results" / "tables" / "behaviour.csv")
    assert set(STUDY_MODELS.values()) <= set(behaviour["variant"])
    # the headline table is the write-up's models only
    manifest = json.loads((tiny_run / "results" / "report" / "manifest.json").read_text())
    assert manifest["headline"]["where"]["variant"] == list(VARIANTS)


def test_positional_table_study_evaluates_the_claims_on_its_family(tiny_run):
    tables = tiny_run / "results" / "tables"
    card = pd.read_csv(tables / "scorecard.csv", keep_default_na=False)
    study = card[card["family"] == "positional_table"]
    write_up = card[card["family"] == "write_up"]
    # every claim about a role the family maps, on that role's retrained model
    roles = write_up[write_up["role"].isin(STUDY_MODELS)]
    assert len(study) == len(roles) > 0
    assert (study["variant"] == study["role"].map(STUDY_MODELS)).all()
    assert set(study["claim"]) == set(roles["claim"])
    comparison = pd.read_csv(tables / "family_comparison.csv", keep_default_na=False)
    assert {"the write-up's models", "pos_encoding: standard", "differs"} <= set(comparison.columns)
    assert len(comparison) == len(write_up)
    for r in study.itertuples():  # each cell says how many seeds hold, as the scorecard does
        cell = comparison.set_index("claim").loc[r.claim, "pos_encoding: standard"]
        seeds = (f"(not measured in {r.seeds} of {r.seeds} seeds" if r.measured == 0
                 else f"(holds in {r.holds} of {r.seeds} seeds")
        assert seeds in cell, r.claim


def test_positional_table_study_section_and_family_table_in_the_report(tiny_run, report_files):
    html, pdf, manifest = report_files
    sections = [s for s in manifest["sections"] if s["name"] == "positional_table"]
    assert len(sections) == 1 and sections[0]["scope"] == "study"
    assert squash(sections[0]["title"]) in pdf and 'id="study-positional_table"' in html
    assert "The same claims on other model families" in html and squash("The same claims on other model families") in pdf
    assert "100.0% of the variance of the original table" in html


# ---------------------------------------------------------------- the formation study

def test_formation_study_trains_on_its_task_and_reads_both_tasks(tiny_run):
    folder = tiny_run / "results" / "two_layer_variable_period" / "seed0"
    spec = json.loads((folder / "spec.json").read_text())
    assert spec["task"]["kind"] == "variable_period" and spec["task"]["name"] == "variable_period"
    assert "task" not in spec["model"]
    behaviour = pd.read_csv(folder / "behaviour.csv").set_index("metric")
    assert behaviour.loc["loss_pred", "task"] == "variable_period"
    assert behaviour.loc["write_up_loss_pred", "task"] == "write_up"
    assert behaviour.loc["period6_acc", "task"] == "write_up"
    assert 0.05 < behaviour.loc["floor_loss_pred", "value"] < 0.08  # the Bayes predictor's
    own = pd.read_csv(tiny_run / "results" / "two_layer" / "seed0" / "behaviour.csv")
    assert set(own["task"]) == {"write_up"} and not own["metric"].str.startswith("write_up_").any()
    for model in ("two_layer", "two_layer_variable_period"):
        table = pd.read_csv(tiny_run / "results" / model / "seed0" / "formation.csv")
        assert {"previous_token", "induction_content", "keys_left_L0H0", "keys_ablation_left",
                "content_midpoint"} <= set(table["metric"]), model
    card = pd.read_csv(tiny_run / "results" / "tables" / "scorecard.csv", keep_default_na=False)
    family = card[card["family"] == "formation"]
    assert len(family) and set(family["variant"]) == {"two_layer_variable_period"}


def test_formation_study_section_and_answer_on_page_one(tiny_run, report_files):
    html, pdf, manifest = report_files
    sections = [s for s in manifest["sections"] if s["name"] == "formation"]
    assert len(sections) == 1 and 'id="study-formation"' in html
    assert squash(sections[0]["title"]) in pdf
    front = html[:html.index('id="summary"')]
    assert "Formation study: two_layer_variable_period (trained on variable_period" in front
    assert "{two_layer_variable_period:" not in html  # every number filled in from the table


def _without_experiment(work):
    """The tiny config with the positional-shortcut experiment's name taken out."""
    from helpers import EXTRA_STAGE, TINY_CONFIG

    config = yaml.safe_load(TINY_CONFIG.read_text())
    del config["experiments"]["positional_shortcut"]
    config["extra_rules"] = [str(EXTRA_STAGE)]
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_removing_the_experiments_name_removes_its_jobs_and_section(tmp_path):
    from helpers import snakemake_command

    _without_experiment(tmp_path)
    dry = subprocess.run(snakemake_command(tmp_path, "-n", "--cores", "1"), cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "positional_shortcut" not in dry.stdout + dry.stderr
    assert "rule extra_answer" in dry.stdout + dry.stderr
    # the report manifest alone (a local rule without inputs): no section of the experiment
    run = subprocess.run(snakemake_command(tmp_path, "--cores", "1", "results/report/manifest.json"),
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    manifest = json.loads((tmp_path / "results" / "report" / "manifest.json").read_text())
    names = {s["name"] for s in manifest["sections"]}
    assert "extra_check" in names and "positional_shortcut" not in names
    assert "positional_shortcut" not in json.dumps(manifest["sections"])


def test_an_extra_rule_file_found_nowhere_is_a_config_error(tmp_path):
    from helpers import snakemake_command

    config = yaml.safe_load((ROOT / "tests" / "config.tiny.yaml").read_text())
    config["extra_rules"] = ["workflow/rules/extra/no_such_experiment.smk"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    proc = subprocess.run(snakemake_command(tmp_path, "-n", "--cores", "1"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "extra_rules.0: 'workflow/rules/extra/no_such_experiment.smk' is not a file" in output


@pytest.mark.parametrize("seed_figures", ["first", "every"])
def test_per_seed_figure_folders_beyond_the_first_seed_only_when_asked(tmp_path, seed_figures):
    from helpers import snakemake_command

    config = yaml.safe_load((ROOT / "tests" / "config.tiny.yaml").read_text())
    config["seeds"] = [0, 1]
    config["report"] = {"seed_figures": seed_figures}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    dry = subprocess.run(snakemake_command(tmp_path, "-n", "--cores", "1"), cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-3000:]
    out = dry.stdout + dry.stderr
    for stage in ("attention", "dynamics", "circuits"):
        # the report shows the first seed's folder of the config's variants
        assert f"results/two_layer/seed0/figures/{stage}" in out
        assert (f"results/two_layer/seed1/figures/{stage}" in out) == (seed_figures == "every")


def test_stage_costs_reads_every_job_of_a_run(tiny_run, capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from stage_costs import job_table, main
    finally:
        sys.path.pop(0)
    jobs = job_table(tiny_run)
    assert {"train", "analyse", "aggregate", "figures", "claims", "report",
            "positional_shortcut_analysis"} <= set(jobs["rule"])
    trained = jobs[jobs["rule"] == "train"]
    assert set(trained["model"]) >= set(VARIANTS) and (trained["s"] > 0).all()
    assert set(jobs.loc[jobs["rule"] == "report", "model"]) == {"-"}
    assert set(jobs.loc[jobs["rule"] == "aggregate", "model"]) == {"-"}  # one job per table
    assert (jobs["rule"] == "aggregate").sum() > 1
    main([str(tiny_run)])
    out = capsys.readouterr().out
    assert f"jobs {len(jobs)}:" in out and "analyses, figures, tables and report" in out
