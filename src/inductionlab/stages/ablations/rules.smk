# Ablations: the write-up's composition table (queries/keys of a later layer from the
# embedding or the residual stream), each earlier head taken out of a layer's keys or
# queries, V-composition off, zero / mean / pattern-preserving head ablations and smear
# off, for every model. The list is data: config["ablations"]["entries"]. Scored on the
# behaviour stage's evaluation sample and prompt suite, so the baseline row matches it.
# No `conda:` directive, for the reason given in train.smk.


model_analysis(
    "ablations",
    "ablations",
    input={"model": model_file(MODEL_FILE), "behaviour_settings": settings_file("behaviour"),
           "settings": settings_file("ablations")},
    output={"table": model_file("ablations.csv"), "attention": model_file("ablated_attention.npz")},
    mem_mb=3000,
    runtime=30,
)


# Induction and first-block scores of every later layer of the deepest variant, mean and
# max over its heads, with their chance levels (a variant shows the layers it has).
ABLATION_SCORE_METRICS = [
    f"{score}_{stat}_L{l}"
    for l in range(1, max(v["n_layers"] for v in config["variants"].values()))
    for score in ("induction", "first_block")
    for stat in ("mean", "max", "chance")
]


ABLATIONS_WORDS = section_prose("prose.yaml")

report_section(
    name="ablations",
    title=ABLATIONS_WORDS["ablations_title"],
    order=60,
    text=ABLATIONS_WORDS["ablations_text"],
    tables=[
        {"path": aggregated_table("ablations", summary=True),
         "caption": ABLATIONS_WORDS["ablations_table1"],
         "where": {"kind": ["baseline", "composition_table", "values_from_embedding", "smear_off"]},
         "spread": {"index": ["ablation"], "metrics": ["loss_all", "loss_pred", "acc_pred", "suite_acc"]},
         "dedupe": True},
        {"path": aggregated_table("ablations", summary=True), "appendix": True,
         "caption": ABLATIONS_WORDS["ablations_table2"],
         "where": {"kind": ["baseline", "composition_table", "values_from_embedding", "smear_off"]},
         "spread": {"index": ["ablation"], "metrics": ABLATION_SCORE_METRICS},
         "dedupe": True},
        {"path": aggregated_table("ablations"),
         "caption": ABLATIONS_WORDS["ablations_table3"],
         "where": {"kind": ["remove_head_from_keys", "remove_head_from_queries"], "status": "ok"},
         "rank": {"within": ["seed", "kind", "layer"], "by": "delta_loss_all",
                  "values": ["delta_loss_all", "acc_pred"], "top": 1}},
        {"path": aggregated_table("ablations"),
         "caption": ABLATIONS_WORDS["ablations_table4"],
         "where": {"kind": ["zero_heads", "mean_heads", "zero_heads_frozen_patterns"], "status": "ok"},
         "rank": {"within": ["seed", "kind", "layer"], "by": "delta_loss_all",
                  "values": ["delta_loss_all", "loss_all", "acc_pred"], "top": 1},
         "dedupe": True},
        {"path": aggregated_table("ablations"), "appendix": True,
         "caption": ABLATIONS_WORDS["ablations_table5"],
         "where": {"kind": "zero_heads", "status": "ok"},
         "pivot": {"index": ["seed"], "columns": ["layer", "head"], "values": "delta_loss_all",
                   "label": "L{}H{}"}},
    ],
    figures=[
        {"path": figure_path("ablations"), "appendix": True,
         "caption": ABLATIONS_WORDS["ablations_figure1"]},
    ],
)

report_section(
    name="ablated_attention",
    title=ABLATIONS_WORDS["ablated_attention_title"],
    chapter=ABLATIONS_WORDS["ablations_title"],
    order=61,
    variants=[v for v in VARIANTS if config["variants"][v]["n_layers"] >= 2],
    text=ABLATIONS_WORDS["ablated_attention_text"],
    figures=[{"path": figure_path("ablated_attention"), "appendix": True,
              "caption": ABLATIONS_WORDS["ablated_attention_figure1"]}],
)


@published
def ablation_outputs():
    return per_model("ablations.csv") + per_model("ablated_attention.npz")
