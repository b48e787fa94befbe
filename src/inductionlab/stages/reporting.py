"""Stages of the report: tables across seeds, claims, figures, the rendered report."""
from __future__ import annotations

from pathlib import Path

from .commands import command, integer, optional_path, path, paths, say, text, write_tables
from .settings import read_settings


def model_title(path) -> str:
    """'variant seed N:' from a results/{variant}/seed{N}/... path, else the file name."""
    parts = Path(path).parts
    if len(parts) >= 3 and parts[-2].startswith("seed"):
        return f"{parts[-3]} {parts[-2].replace('seed', 'seed ')}:"
    return f"{Path(path).name}:"


@command("attention-figures", "attention heatmaps of one model from its attention.npz",
         attention=path("an attention.npz"), out_dir=path("folder for the figures"),
         title=text("default: the variant and seed of the attention.npz's folder"))
def attention_figures(attention, out_dir, title=None):
    from ..atomic import atomic_dir
    from ..report.attention_plots import write_attention_figures

    with atomic_dir(out_dir) as tmp:
        write_attention_figures(attention, tmp, title=title or model_title(attention))


@command("circuit-figures", "heatmaps of every head's OV and QK circuit (ov.png, qk.png)",
         weights=path("a weights.npz"), out_dir=path("folder for ov.png and qk.png"),
         title=text("default: the variant and seed in weights.npz"))
def circuit_figures(weights, out_dir, title=None):
    from ..atomic import atomic_dir
    from ..report.circuit_plots import write_circuit_figures

    with atomic_dir(out_dir) as tmp:
        write_circuit_figures(weights, tmp, title=title)


@command("dynamics-figures", "loss, head-score and per-position figures of one model over training",
         dynamics=path("a dynamics.csv"),
         phase_change=path("the stacked phase_change table (results/tables/phase_change.csv), "
                           "where the head-role rule decided whether induction formed"),
         out_dir=path("folder for the figures"),
         settings=optional_path("dynamics settings JSON (for the task)"),
         title=text("default: the variant and seed of the dynamics.csv's folder"))
def dynamics_figures(dynamics, phase_change, out_dir, settings=None, title=None):
    from ..atomic import atomic_dir
    from ..core.loading import read_json
    from ..report.dynamics_plots import write_dynamics_figures

    task = read_json(settings, "the dynamics settings").get("task") if settings else None
    with atomic_dir(out_dir) as tmp:
        write_dynamics_figures(dynamics, phase_change, tmp, title=title or model_title(dynamics),
                               task=task)


@command("figure", "a figure declared in inductionlab.report.figure_registry: of a model "
         "across its seeds, of the variants side by side, or of a study",
         name=text("the figure's name", required=True),
         subject=text("a model's name, models (the variants side by side) or study",
                      required=True),
         models=text("for subject models: the models' names, comma-separated, in the order "
                     "they are drawn"),
         out=path("the PNG to write"),
         inputs=paths("the figure's inputs as name=path, each name one the figure declares"))
def figure(name, subject, out, inputs, models=None):
    from .. import experiments
    from ..report import figures  # noqa: F401 - declares the workflow's figures
    from ..report.figure_registry import draw
    from ..report.plots import save

    experiments.available()  # each experiment's package declares its figures
    save(draw(name, subject, [str(p) for p in inputs], [m for m in (models or "").split(",") if m]),
         out)


@command("aggregate", "stack per-model tables; mean, std, min, max across seeds",
         name=text("table name (selects its key columns)", required=True),
         long=path("the stacked table to write"), summary=path("the summary table to write"),
         inputs=paths("the per-model tables"),
         final_step=integer("the inputs are training logs: each must end at this step", default=0),
         roles=optional_path("the head-role rule (results/settings/roles.json), for the "
                             "tables it decides: head_scores, phase_change"))
def aggregate(name, long, summary, inputs, final_step=0, roles=None):
    from ..core.loading import BadInput
    from ..report.aggregate import aggregate as stack_tables, read_complete

    # --name is the per-model files' name (results/{model}/seed{seed}/{name}.csv): it
    # selects the key columns, so another name would stack the tables wrongly
    for p in inputs:
        if p.name != f"{name}.csv":
            read_complete(p, final_step or None)  # a damaged file is named as such first
            raise BadInput(p, f"is not a {name}.csv: --name {name} names the per-model table "
                           "the inputs are", hint=None)

    rule = read_settings(roles, "roles") if roles is not None else None
    stack_tables(name, inputs, long, summary, final_step=final_step or None, roles=rule)


@command("claims", "evaluate the write-up's claims on every seed",
         claims_yaml=paths("the claim set (workflow/claims.yaml), then any experiment's "
                           "claims files"),
         claims=path("output: one row per claim and seed"),
         scorecard=path("output: one row per claim"), tables=paths("aggregated per-seed tables"),
         roles=path("the head-role rule (results/settings/roles.json)"),
         families=optional_path("JSON of further model families: name -> {title, models: "
                                "role -> model}"),
         comparison=optional_path("output: every family's outcome of each claim, side by side"))
def claims(claims_yaml, claims, scorecard, tables, roles, families=None, comparison=None):
    from ..core.loading import read_json
    from ..claims.verdicts import run_claims

    rule = read_settings(roles, "roles")
    more = read_json(families, "a model families JSON") if families else None
    run_claims(claims_yaml, tables, claims, scorecard, rule, families=more,
               comparison_csv=comparison)


@command("readings", "what the summary reads of every model: its best head's content or "
         "position reading beside the period test, and its algorithm as measured",
         head_scores=path("the stacked head_scores table"),
         behaviour=path("the stacked behaviour table (the period test)"),
         offset_profile=path("the stacked offset_profile table"),
         algorithm_fit=path("the stacked algorithm_fit table"),
         content_or_position=path("content_or_position.csv to write"),
         algorithms=path("algorithm_readings.csv to write"))
def readings(head_scores, behaviour, offset_profile, algorithm_fit, content_or_position, algorithms):
    from ..analysis import readings as R
    from ..core.loading import read_table

    scores = read_table(head_scores, ["variant", "seed", "layer", "head", "induction"],
                        kind="the stacked head_scores table")
    period = read_table(behaviour, ["variant", "seed", "metric", "value"],
                        kind="the stacked behaviour table")
    profile = read_table(offset_profile, ["variant", "seed", "component", "sample", "source",
                                          "offset", "value", "low", "high"],
                         kind="the stacked offset_profile table")
    fit = read_table(algorithm_fit, ["variant", "seed", "program", "sample", "metric", "value"],
                     kind="the stacked algorithm_fit table")
    write_tables({"positions": R.content_or_position(scores, period),
                  "algorithms": R.algorithm_table(profile, fit)},
                 {"positions": content_or_position, "algorithms": algorithms})


def manifest_files(document) -> list[Path]:
    """Every file a report manifest names (any string value that is an existing file)."""
    if isinstance(document, dict):
        return [p for v in document.values() for p in manifest_files(v)]
    if isinstance(document, list):
        return [p for v in document for p in manifest_files(v)]
    if isinstance(document, str) and "\n" not in document:
        try:
            return [Path(document)] if Path(document).is_file() else []
        except (OSError, ValueError):  # words, not a path: too long a name, a NUL
            return []
    return []


# The keys of a report manifest (written by the workflow's report_manifest rule).
MANIFEST_KEYS = ("title", "config", "variants", "seeds", "scorecard", "sections")


@command("report", "render the report manifest to HTML and PDF",
         manifest=path(), html=path(), pdf=path())
def report(manifest, html, pdf):
    from ..core.loading import check_file, read_json
    from ..report.render import write_report

    document = read_json(manifest, "a report manifest (results/report/manifest.json)", MANIFEST_KEYS)
    for shown in manifest_files(document):  # the report reads them; each as the workflow wrote it
        check_file(shown, "a file the report shows")

    write_report(manifest, html, pdf, log=say)
