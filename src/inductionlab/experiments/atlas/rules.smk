# The formation atlas: when does an induction head form, as a law of the context length?
#
# The formation study's variants retrained on variable periods over a grid (settings.py):
# every variant at every context length T, and at the reference T the other
# initialisations, the interventions during training and the control. Every point is a
# registered model, so the generic stages train and analyse it for every seed; the
# atlas's tables are read from the stacked, decided phase_change and behaviour tables
# (analysis.py): per point and seed, the law over T on both clocks, and each change's
# midpoint ratio to the unchanged run. Its tasks (one variable_period task per longest
# period) are registered here, into tasks:, before its models. Settings:
# config["experiments"]["atlas"] (schema.yaml); words: prose.yaml.
import json
import shlex

from inductionlab.experiments.atlas.analysis import sentence_key
from inductionlab.experiments.atlas.settings import (atlas_tasks, grid_points, intervention_words,
                                                     model_changes, task_name)

AT = config["experiments"]["atlas"]
config["tasks"] = {**(config.get("tasks") or {}), **atlas_tasks(AT)}
AT_GRID = grid_points(AT, config)
for _point in AT_GRID:
    register_model(_point.model, _point.variant, intervention=_point.setting,
                   reference=_point.reference, **model_changes(AT, _point))
AT_MODELS = [p.model for p in AT_GRID]
AT_GRID_JSON = json.dumps({"points": [p.to_dict() | {"task": task_name(AT, p.context)} for p in AT_GRID],
                           "steps": config["train"]["steps"],
                           "batch_size": config["train"]["batch_size"]}, sort_keys=True)
AT_TABLES = {name: f"{RESULTS}/tables/atlas_{name}.csv"
             for name in ("points", "midpoints", "law", "band", "changes", "sentences")}
AT_FIGURE = f"{RESULTS}/figures/study/atlas_midpoints.png"
AT_VARIANTS = list(AT["variants"])


localrules:
    atlas_tables,
    atlas_figure,


rule atlas_tables:
    input:
        # whether a head formed and each fit's verdict: the stacked, decided table
        phase_change=aggregated_table("phase_change"),
        behaviour=aggregated_table("behaviour"),
    output:
        **AT_TABLES,
    params:
        # the named paths, then the grid (a parameter: a changed grid reruns the tables)
        paths=lambda wildcards, input, output: (named_paths(wildcards, input, output)
                                                + f" --grid {shlex.quote(AT_GRID_JSON)}"),
    log:
        "logs/atlas/tables.log",
    benchmark:
        "results/benchmarks/atlas/tables.tsv"
    shell:
        command_line("atlas-tables")


rule atlas_figure:
    input:
        midpoints=AT_TABLES["midpoints"],
        band=AT_TABLES["band"],
    output:
        figure=AT_FIGURE,
    params:
        paths=named_paths,
    log:
        "logs/atlas/figure.log",
    benchmark:
        "results/benchmarks/atlas/figure.tsv"
    shell:
        command_line("atlas-figure")


@published
def atlas_outputs():
    return list(AT_TABLES.values()) + [AT_FIGURE]


AT_COUNTS = {role: sum(p.role == role for p in AT_GRID) for role in ("context", "init", "intervention", "control")}
AT_VALUES = dict(variants=AT_VARIANTS, contexts=AT["contexts"], reference=AT["reference_context"],
                 control=AT["control"], inits=AT["inits"], counts=AT_COUNTS, n_models=len(AT_GRID),
                 n_seeds=len(SEEDS), min_period=AT["min_period"], max_period=AT["max_period"],
                 batch_size=config["train"]["batch_size"],
                 interventions=[intervention_words(s) for s in AT["interventions"]])
AT_WORDS = section_prose("prose.yaml", variant="", **AT_VALUES)

report_section(
    name="atlas",
    title=AT_WORDS["title"],
    scope="study",
    order=85,
    text=AT_WORDS["text"],
    template="section.html.j2",
    figures=[{"path": AT_FIGURE, "caption": AT_WORDS["figure"]}],
    tables=[
        {"path": AT_TABLES["law"], "caption": AT_WORDS["law_table"],
         "columns": ["variant", "quantity", "clock", "sentence"]},
        {"path": AT_TABLES["changes"], "caption": AT_WORDS["changes_table"],
         "columns": ["variant", "init", "intervention", "n_seeds", "ratio", "ratio_low",
                     "ratio_high", "loss_ratio", "loss_ratio_low", "loss_ratio_high", "shapes",
                     "formed", "note"]},
        {"path": AT_TABLES["points"], "caption": AT_WORDS["points_table"],
         "columns": ["model", "seed", "content_midpoint", "content_span", "content_shape",
                     "loss_midpoint", "loss_span", "loss_shape", "formed", "acc_pred",
                     "floor_acc_pred"]},
        {"path": AT_TABLES["points"], "caption": AT_WORDS["intervals_table"], "appendix": True,
         "columns": ["model", "seed", "content_midpoint_low", "content_midpoint_high",
                     "content_span_low", "content_span_high", "content_verdict",
                     "loss_midpoint_low", "loss_midpoint_high", "loss_span_low", "loss_span_high",
                     "loss_verdict", "acc_pred_low", "acc_pred_high", "floor_share", "note"]},
    ],
)

# the law, one sentence per variant, from the table of sentences: on page 1
for _variant in AT_VARIANTS:
    report_highlight(AT_TABLES["sentences"],
                     section_prose("prose.yaml", variant=sentence_key(_variant), **AT_VALUES)["highlight"],
                     front=True)
