# Ablations: the write-up's composition table (queries/keys of a later layer from the
# embedding or the residual stream), each earlier head taken out of a layer's keys or
# queries, V-composition off, zero / mean / pattern-preserving head ablations and smear
# off, for every model. The list is data: config["ablations"]["entries"]. Scored on the
# behaviour stage's evaluation sample and prompt suite, so the baseline row matches it.
# No `conda:` directive, for the reason given in train.smk.


rule ablations:
    input:
        model=model_file("model.pt"),
        behaviour_settings=settings_file("behaviour"),
        settings=settings_file("ablations"),
    output:
        table=model_file("ablations.csv"),
        attention=model_file("ablated_attention.npz"),
    log:
        "logs/ablations/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/ablations/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    shell:
        "inductionlab ablations {input.model} {input.behaviour_settings} {input.settings} "
        "--table {output.table} --attention {output.attention} --threads {threads} > {log} 2>&1"


# Induction and first-block scores of every later layer of the deepest variant, mean and
# max over its heads, with their chance levels (a variant shows the layers it has).
ABLATION_SCORE_METRICS = [
    f"{score}_{stat}_L{l}"
    for l in range(1, max(v["n_layers"] for v in config["variants"].values()))
    for score in ("induction", "first_block")
    for stat in ("mean", "max", "chance")
]


report_section(
    name="ablations",
    title="Ablations",
    order=60,
    text="Each ablation is rerun on the behaviour sample: loss on all and predictable targets, "
    "predictable accuracy, greedy accuracy on the in-distribution suite prompts, and for every "
    "later layer the mean and max over its heads of the induction score (attention on every "
    "earlier copy of the target) and of the first-block score (attention on the target's copy in "
    "the first block: the write-up's faint diagonal lines), each beside its chance level (uniform "
    "causal attention on the same queries and keys). Composition rows: the later layer's "
    "queries/keys from the embedding (direct path) or the full residual stream; values always "
    "from the residual.",
    tables=[
        {"path": aggregated_table("ablations", summary=True),
         "caption": "The write-up's composition table and the composition and smear ablations: "
         "mean ± std [min, max] over seeds (reference values, one seed, not printed in the write-up's text: 3.124, 2.518, 2.618, 1.391; baseline 1.384).",
         "where": {"kind": ["baseline", "composition_table", "values_from_embedding", "smear_off"]},
         "spread": {"index": ["ablation"], "metrics": ["loss_all", "loss_pred", "acc_pred", "suite_acc"]},
         "dedupe": True},
        {"path": aggregated_table("ablations", summary=True),
         "caption": "The same ablations: attention of every later layer on the target's earlier "
         "copies (induction) and on its copy in the first block, mean and best head, beside the "
         "chance level; mean ± std [min, max] over seeds.",
         "where": {"kind": ["baseline", "composition_table", "values_from_embedding", "smear_off"]},
         "spread": {"index": ["ablation"], "metrics": ABLATION_SCORE_METRICS},
         "dedupe": True},
        {"path": aggregated_table("ablations"),
         "caption": "One earlier head taken out of a later layer's keys or queries, heads aligned "
         "by effect: within each seed the heads sorted by the rise of the loss they cause (rank 1: "
         "largest), then mean ± std [min, max] over seeds of each rank.",
         "where": {"kind": ["remove_head_from_keys", "remove_head_from_queries"], "status": "ok"},
         "rank": {"within": ["seed", "kind", "layer"], "by": "delta_loss_all",
                  "values": ["delta_loss_all", "acc_pred"]}},
        {"path": aggregated_table("ablations"),
         "caption": "Head ablations, heads aligned by effect: within each seed and layer the heads "
         "sorted by the rise of the loss when each is zeroed, replaced by its mean, or zeroed with "
         "every attention pattern frozen to the clean run (rank 1: largest rise); mean ± std "
         "[min, max] over seeds of each rank. Per-seed values with head numbers: appendix.",
         "where": {"kind": ["zero_heads", "mean_heads", "zero_heads_frozen_patterns"], "status": "ok"},
         "rank": {"within": ["seed", "kind", "layer"], "by": "delta_loss_all",
                  "values": ["delta_loss_all", "loss_all", "acc_pred"]},
         "dedupe": True},
        {"path": aggregated_table("ablations"), "appendix": True,
         "caption": "Rise of the loss over all targets (nats) when one head is zeroed, per seed.",
         "where": {"kind": "zero_heads", "status": "ok"},
         "pivot": {"index": ["seed"], "columns": ["layer", "head"], "values": "delta_loss_all",
                   "label": "L{}H{}"}},
    ],
    figures=[
        {"path": f"{RESULTS}/figures/{{model}}/ablations.png", "appendix": True,
         "caption": "Validation loss under every ablation; bars are the mean over seeds, whiskers min–max."},
    ],
)

report_section(
    name="ablated_attention",
    title="Attention left by the composition ablations",
    order=61,
    variants=[v for v in VARIANTS if config["variants"][v]["n_layers"] >= 2],
    text="Mean attention of every later layer (layer 1 onwards) of the first seed: clean, with "
    "that layer's queries and keys from the embedding, with keys from the residual (K-composition "
    "on), and with queries from the residual only (K-composition off). Diagonal stripes at offsets "
    "5, 11 and 17 are attention on the target's earlier copies; the lines from keys 0–5 are the "
    "first-block copies.",
    figures=[{"path": f"{RESULTS}/figures/{{model}}/ablated_attention.png",
              "caption": "Attention of each later layer, clean and ablated (first seed)."}],
)
