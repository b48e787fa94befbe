# Positional shortcut: can one layer solve the task with a learned positional table?
#
# With a fixed sinusoidal table the position–position term p_i·p_j of the attention
# score is fixed, so a 1-layer model cannot learn "attend 5 back". This experiment
# trains the base variant (one_layer) with pos_encoding: learned for every seed and
# compares it with fixed-table variants of the main pipeline: losses, completions,
# attention by offset per head, and the learned table's p pᵀ/√d.
#
# Switched on by listing this file under extra_rules in config.yaml; its settings are
# config["experiments"]["positional_shortcut"] (keys and defaults:
# workflow/schemas/positional_shortcut.schema.yaml). Outputs:
#   results/positional_shortcut/{model}/seed{seed}/   the learned-table model (spec.json,
#       model.pt, train_log.csv, checkpoints/) and, for it and every compared variant, the
#       per-model tables positional_shortcut{,_offsets,_completions,_positions}.csv
#   results/tables/positional_shortcut*.csv           stacked, with *_summary.csv
#   results/positional_shortcut/figures/              attention by offset, p pᵀ/√d
# No `conda:` directive, for the reason given in train.smk.
from inductionlab.data import TaskConfig
from inductionlab.positional_shortcut import learned_spec, metric_names

# Checked, with defaults filled, by the Snakefile against positional_shortcut.schema.yaml.
PS = config["experiments"]["positional_shortcut"]
PS_DIR = f"{RESULTS}/positional_shortcut"
PS_LEARNED = f"{PS['base_variant']}_learned"
PS_COMPARED = [v for v in PS["compare"] if v in VARIANTS]
PS_SKIPPED = [v for v in PS["compare"] if v not in VARIANTS]
PS_MODELS = [PS_LEARNED] + PS_COMPARED
PS_TABLES = ["positional_shortcut", "positional_shortcut_offsets",
             "positional_shortcut_completions", "positional_shortcut_positions"]
PS_BLOCK = TaskConfig.from_dict(config["task"]).block_len
PS_OFFSET = PS_BLOCK - 1  # position i predicts token i + 1, the token PS_OFFSET back
PS_METRICS = metric_names(TaskConfig.from_dict(config["task"]), PS["prompt_len"])
# One model's folder in the experiment (wildcards model, seed).
PS_MODEL_DIR = f"{PS_DIR}/{{model}}/seed{{seed}}"


localrules:
    positional_shortcut_settings,
    positional_shortcut_spec,
    positional_shortcut_table,
    positional_shortcut_figures,


# The table stacking below replaces the generic `aggregate` rule for these tables:
# their per-model files live in this experiment's folders, not in results/{variant}/.
ruleorder: positional_shortcut_table > aggregate


rule positional_shortcut_settings:
    output:
        f"{PS_DIR}/settings.json",
    params:
        settings=json.dumps({**PS, "task": config["task"]}, sort_keys=True),
    log:
        "logs/positional_shortcut/settings.log",
    threads: 1
    resources:
        mem_mb=200,
        runtime=1,
    run:
        from inductionlab.atomic import write_text

        write_text(output[0], json.dumps(json.loads(params.settings), indent=2) + "\n")


rule positional_shortcut_spec:
    output:
        f"{PS_MODEL_DIR}/spec.json",
    wildcard_constraints:
        model=PS_LEARNED,
    params:
        spec=lambda w: json.dumps(
            learned_spec(make_spec(config, PS["base_variant"], int(w.seed)), PS_LEARNED),
            sort_keys=True),
    log:
        "logs/positional_shortcut/spec/{model}/seed{seed}.log",
    threads: 1
    resources:
        mem_mb=200,
        runtime=1,
    run:
        from inductionlab.spec import write_spec

        write_spec(output[0], json.loads(params.spec))


rule positional_shortcut_train:
    input:
        f"{PS_MODEL_DIR}/spec.json",
    output:
        model=f"{PS_MODEL_DIR}/model.pt",
        log_csv=f"{PS_MODEL_DIR}/train_log.csv",
        checkpoints=directory(f"{PS_MODEL_DIR}/checkpoints"),
    wildcard_constraints:
        model=PS_LEARNED,
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.model),
    log:
        "logs/positional_shortcut/train/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/positional_shortcut/train/{model}/seed{seed}.tsv"
    threads: config["train"]["threads"]
    resources:
        **train_resources(),  # the main training jobs' requests (train.smk)
    shell:
        "inductionlab train {input} {params.out_dir} --threads {threads} > {log} 2>&1"


rule positional_shortcut_analysis:
    input:
        # the learned-table model is trained here; a compared variant is the main pipeline's
        model=lambda w: (f"{PS_DIR}/{w.model}/seed{w.seed}/model.pt" if w.model == PS_LEARNED
                         else model_file("model.pt").format(variant=w.model, seed=w.seed)),
        settings=f"{PS_DIR}/settings.json",
    output:
        metrics=f"{PS_MODEL_DIR}/positional_shortcut.csv",
        offsets=f"{PS_MODEL_DIR}/positional_shortcut_offsets.csv",
        completions=f"{PS_MODEL_DIR}/positional_shortcut_completions.csv",
        positions=f"{PS_MODEL_DIR}/positional_shortcut_positions.csv",
    wildcard_constraints:
        model="|".join(PS_MODELS),
    log:
        "logs/positional_shortcut/analysis/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/positional_shortcut/analysis/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    shell:
        "inductionlab positional-shortcut {input.model} {input.settings} "
        "--metrics {output.metrics} --offsets {output.offsets} "
        "--completions {output.completions} --positions {output.positions} "
        "--threads {threads} > {log} 2>&1"


rule positional_shortcut_table:
    input:
        lambda w: expand(f"{PS_MODEL_DIR}/{w.table}.csv", model=PS_MODELS, seed=SEEDS),
    output:
        long=f"{RESULTS}/tables/{{table}}.csv",
        summary=f"{RESULTS}/tables/{{table}}_summary.csv",
    wildcard_constraints:
        table="|".join(PS_TABLES),
    log:
        "logs/positional_shortcut/table/{table}.log",
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    shell:
        "inductionlab aggregate {wildcards.table} {output.long} {output.summary} {input} "
        "> {log} 2>&1"


rule positional_shortcut_figures:
    input:
        offsets=aggregated_table("positional_shortcut_offsets"),
        positions=aggregated_table("positional_shortcut_positions"),
        settings=f"{PS_DIR}/settings.json",
    output:
        offsets=f"{PS_DIR}/figures/attention_by_offset.png",
        positions=f"{PS_DIR}/figures/positional_scores.png",
    log:
        "logs/positional_shortcut/figures.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "inductionlab positional-shortcut-figures {input.offsets} {input.positions} "
        "{input.settings} --offsets-figure {output.offsets} "
        "--positions-figure {output.positions} > {log} 2>&1"


report_section(
    name="positional_shortcut",
    title="Positional shortcut: one layer with a learned positional table",
    scope="study",
    order=85,
    text=f"{PS_LEARNED} is {PS['base_variant']} with a trained positional table "
    "(pos_encoding: learned, started from the standard sinusoid), compared with "
    f"{', '.join(PS_COMPARED) or 'no other variant'}"
    + (f" ({', '.join(PS_SKIPPED)}: not in this run's variants)" if PS_SKIPPED else "")
    + f". Position i predicts token i + 1, which equals token i − {PS_OFFSET}; one head that "
    f"attends {PS_OFFSET} back and copies solves the task without induction, and only the "
    "position–position term p_i·p_j/√d of the attention score can say where that is. "
    f"nearest_copy_max: the largest nearest-copy score of any head (mean attention {PS_OFFSET} "
    f"back, queries i ≥ {PS_BLOCK}); induction_max: the largest induction score (attention on every "
    f"earlier copy of the target, {PS_OFFSET}, {PS_OFFSET + PS_BLOCK}, {PS_OFFSET + 2 * PS_BLOCK}, "
    f"... back, which all hold the same letter); each beside its chance level (uniform causal "
    f"attention on the same queries and keys); pos_argmax_offset{PS_OFFSET}_share: share of query rows i ≥ "
    f"{PS_OFFSET} whose largest p_i·p_j (j ≤ i) is at j = i − {PS_OFFSET}; "
    f"pos_offset{PS_OFFSET}_margin: p_i·p_(i−{PS_OFFSET}) minus the row's largest other term, "
    f"mean over those rows. Losses on the training validation set; random_len{PS['prompt_len']}: "
    f"greedy accuracy from random {PS['prompt_len']}-letter prompts.",
    tables=[
        {"path": aggregated_table("positional_shortcut", summary=True),
         "caption": "Task: validation loss (all and predictable targets), predictable accuracy and "
         "random-prompt completion (mean accuracy, share exact); mean ± std [min, max] over seeds.",
         "spread": {"index": ["variant"], "metrics": PS_METRICS["task"]}},
        {"path": aggregated_table("positional_shortcut", summary=True),
         "caption": f"Mechanism: attention {PS_OFFSET} back and on every copy of the target, "
         "and the positional term's peak; "
         "mean ± std [min, max] over seeds.",
         "spread": {"index": ["variant"], "metrics": PS_METRICS["mechanism"]}},
        {"path": aggregated_table("positional_shortcut_offsets"),
         "caption": f"Mean attention {PS_OFFSET} back of every head, per seed "
         "(head numbers are not comparable across seeds).",
         "where": {"offset": PS_OFFSET},
         "pivot": {"index": ["variant", "seed"], "columns": ["layer", "head"],
                   "values": "attention", "label": "L{}H{}"}},
        {"path": aggregated_table("positional_shortcut_completions"),
         "caption": f"Greedy completions (seed {SEEDS[0]}).",
         "where": {"seed": SEEDS[0]},
         "columns": ["variant", "prompt", "completion", "expected", "accuracy"]},
    ],
    figures=[
        {"path": f"{PS_DIR}/figures/attention_by_offset.png",
         "caption": f"Mean attention against offset i − j for every head of every seed; dashed: "
         f"the copies of the target ({PS_OFFSET}, {PS_OFFSET + PS_BLOCK}, ... back), where a head "
         "must look to solve the task in one layer."},
        {"path": f"{PS_DIR}/figures/positional_scores.png",
         "caption": f"Position–position term p_i·p_j/√d of the attention score (first seed): "
         f"learned table against the fixed ones; dots mark each row's maximum, the dashed line "
         f"is {PS_OFFSET} back."},
    ],
)

report_highlight(
    aggregated_table("positional_shortcut", summary=True),
    f"Positional shortcut: one layer with a learned positional table ({PS_LEARNED}) reaches a loss "
    f"of {{{PS_LEARNED}:loss_all}} nats over all targets and a predictable accuracy of "
    f"{{{PS_LEARNED}:acc_pred}}"
    + (" (" + "; ".join(f"{v}: {{{v}:loss_all}} nats, accuracy {{{v}:acc_pred}}"
                         for v in PS_COMPARED) + ")" if PS_COMPARED else "")
    + f". Its keys are a function of the token and the position only, so the attention it needs "
    f"comes from the learned table: best nearest-copy score {{{PS_LEARNED}:nearest_copy_max}} "
    f"(chance {{{PS_LEARNED}:nearest_copy_chance}}), best induction score "
    f"{{{PS_LEARNED}:induction_max}} (chance {{{PS_LEARNED}:induction_chance}}).",
)
