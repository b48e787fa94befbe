"""Stages of the report: tables across seeds, claims, figures, the rendered report."""
from __future__ import annotations

from pathlib import Path

from .commands import command, integer, optional_path, path, paths, say, text
from .settings import read_settings


@command("figure", "a figure declared in inductionlab.formatting.figure_registry: of a model "
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
    from ..formatting.figure_registry import draw
    from ..formatting.plots import save
    from . import available, tables  # noqa: F401 - every table's format, for the figures

    available()  # each stage's package declares its figures
    experiments.available()  # and each experiment's
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
    from .aggregate import aggregate as stack_tables, read_complete

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
         specs=paths("the spec.json of every model of this run: the tables must be this "
                     "run's stacked tables of exactly these models"),
         roles=path("the head-role rule (results/settings/roles.json)"),
         families=optional_path("JSON of further model families: name -> {title, models: "
                                "role -> model}"),
         comparison=optional_path("output: every family's outcome of each claim, side by side"))
def claims(claims_yaml, claims, scorecard, tables, specs, roles, families=None, comparison=None):
    from ..core.loading import read_json
    from ..claims.verdicts import run_claims

    rule = read_settings(roles, "roles")
    more = read_json(families, "a model families JSON") if families else None
    run_claims(claims_yaml, tables, claims, scorecard, rule, families=more,
               comparison_csv=comparison, specs=specs)


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
