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

from inductionlab.experiments.atlas.settings import atlas_tasks, grid_points, model_changes, task_name

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
AT_TABLES = {name: f"{RESULTS}/tables/atlas_{name}.csv" for name in ("points", "law", "band", "changes")}


localrules:
    atlas_tables,


rule atlas_tables:
    input:
        # whether a head formed and each fit's verdict: the stacked, decided table
        phase_change=aggregated_table("phase_change"),
        behaviour=aggregated_table("behaviour"),
    output:
        **AT_TABLES,
    params:
        paths=named_paths,
        grid=AT_GRID_JSON,
    log:
        "logs/atlas/tables.log",
    benchmark:
        "results/benchmarks/atlas/tables.tsv"
    shell:
        "inductionlab atlas-tables {params.paths} --grid {params.grid:q} > {log} 2>&1"


@published
def atlas_outputs():
    return list(AT_TABLES.values())
