# Behaviour: prompt suite, failure modes, attention patterns, head scores and roles.
# No `conda:` directive, for the reason given in train.smk.

rule behaviour:
    input:
        model=model_file("model.pt"),
        settings=settings_file("behaviour"),
    output:
        completions=model_file("completions.csv"),
        failure_modes=model_file("failure_modes.csv"),
        attention=model_file("attention.npz"),
        head_scores=model_file("head_scores.csv"),
        summary=model_file("behaviour.csv"),
    log:
        "logs/behaviour/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/behaviour/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=20,
    shell:
        "inductionlab behaviour {input.model} {input.settings} "
        "--completions {output.completions} --failure-modes {output.failure_modes} "
        "--attention {output.attention} --head-scores {output.head_scores} "
        "--summary {output.summary} > {log} 2>&1"


rule attention_figures:
    input:
        model_file("attention.npz"),
    output:
        directory(model_file("figures/attention")),
    log:
        "logs/attention_figures/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/attention_figures/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "inductionlab attention-figures {input} {output} > {log} 2>&1"


report_section(
    name="behaviour",
    title="Behaviour: completions and habits",
    order=30,
    template="src/inductionlab/report/templates/sections/behaviour.html.j2",
    tables=[
        {"path": aggregated_table("completions"), "caption": "Greedy completions of the prompt suite."},
        {"path": aggregated_table("completions"), "appendix": True,
         "caption": "Greedy completions of the prompt suite, every seed.",
         "columns": ["prompt", "seed", "completion", "expected", "write_up_completion", "accuracy"]},
        {"path": aggregated_table("behaviour", summary=True),
         "caption": "Random prompts: greedy completion accuracy (mean over prompts) and share "
         "completed exactly, from blocks drawn with replacement as in training and from blocks of "
         "distinct letters as the write-up tried; the share of predictable targets repeating the "
         "current letter where the model predicts that repeat (teacher-forced); on prompts of two "
         "blocks of distinct letters, none shared, the share of completed letters that continue "
         "the first block and the second (the letter after the previous one's place in that block) "
         "and the immediate-repeat rate. Mean ± std [min, max] over seeds; every habit metric: "
         "appendix.",
         "spread": {"index": ["metric"]},
         "where": {"metric": [f"random{kind}_len{L}_{m}"
                              for L in config["behaviour"]["random_prompt_lengths"]
                              for kind in ("", "_distinct") for m in ("acc_mean", "exact")]
                   + ["repeat_when_correct_rate", "ood_two_blocks_follows_first",
                      "ood_two_blocks_follows_second", "ood_two_blocks_repeat_rate"]}},
        {"path": aggregated_table("behaviour", summary=True), "appendix": True,
         "caption": "Every habit of the random prompts: completion accuracy, share completed "
         "exactly, immediate-repeat rate of the completions against that of the correct "
         "completions, share of generated letters found in the prompt; the out-of-distribution "
         "prompts; the ICL score. Mean ± std [min, max] over seeds.",
         "spread": {"index": ["metric"]},
         "where": {"metric": [f"random{kind}_len{L}_{m}"
                              for L in config["behaviour"]["random_prompt_lengths"]
                              for kind in ("", "_distinct")
                              for m in ("acc_mean", "exact", "repeat_rate", "repeat_rate_data",
                                        "share_in_prompt")]
                   + ["ood_len{}_repeat_rate".format(2 * config["task"]["block_len"]),
                      "ood_len{}_share_in_prompt".format(2 * config["task"]["block_len"]),
                      "ood_two_blocks_follows_first", "ood_two_blocks_follows_second",
                      "ood_two_blocks_repeat_rate", "repeat_when_correct_rate", "icl_score"]}},
    ],
)

ONE_LAYER_VARIANTS = [v for v in VARIANTS if config["variants"][v]["n_layers"] == 1]
# the suite prompt whose attention heatmaps the body shows: the first of two whole blocks
BODY_PROMPT = next((k for k, p in enumerate(config["behaviour"]["prompts"])
                    if len(p["prompt"]) == 2 * config["task"]["block_len"]), 0)

report_section(
    name="attention",
    title="Attention patterns and head roles",
    order=40,
    text="Head scores on random task sequences (prefix matching on blocks of distinct letters), "
    "per seed. induction: attention on every earlier copy of the token to be predicted; "
    "nearest_copy: on its nearest copy only (5 back); first_block: on its copy in the first "
    "block; previous_token: 1 back; local: the current and the previous {w} − 1 tokens; "
    "prefix_matching: keys that follow an earlier copy of the current token; copying: the "
    "empirical copying score. Every attention score has a chance level, the score of uniform "
    "causal attention on the same queries and keys (first table). A head has a role only when its "
    "score is at least {times}× its chance level and at least chance + {above}. Figures: the first "
    "seed; every seed's mean patterns are the summary's key figure.".format(w=config["behaviour"]["roles"]["local_window"],
                   times=config["behaviour"]["roles"]["times_chance"],
                   above=config["behaviour"]["roles"]["above_chance"]),
    tables=[
        {"path": aggregated_table("head_scores"),
         "caption": "Chance levels: each attention score of uniform causal attention.",
         "columns": [f"{s}_chance" for s in ("induction", "nearest_copy", "first_block",
                                              "previous_token", "local", "prefix_matching")],
         "max_rows": 1},
        {"path": aggregated_table("head_scores"),
         "caption": "Head scores aligned by rank: within each seed and layer the heads sorted by "
         "their induction score (rank 1: highest), then mean ± std [min, max] over seeds of each "
         "rank's scores. Per-seed values with head numbers and roles: appendix.",
         "rank": {"within": ["seed", "layer"], "by": "induction",
                  "values": ["induction", "nearest_copy", "first_block", "previous_token", "copying"]}},
        {"path": aggregated_table("head_scores"), "appendix": True,
         "caption": "Head scores and roles per seed.",
         "columns": ["seed", "layer", "head", "induction", "nearest_copy", "first_block",
                     "previous_token", "local", "prefix_matching", "copying", "roles"]},
    ],
    figures=[
        {"path": f"{RESULTS}/figures/{{model}}/attention_seeds.png",
         "caption": "Mean attention pattern of every head over random task sequences, every seed "
         "(one row per seed). Head numbers are arbitrary across seeds, so within each seed and "
         "layer the heads are ordered by a score, highest first: the induction score in layers "
         "that can form an induction head (layer ≥ 1, or smeared keys), the previous-token score "
         "in the others. Each panel names the seed, the head, its score and its roles.", "key": True},
        {"path": model_file("figures/attention/mean.png"), "dir": model_file("figures/attention"),
         "appendix": True,
         "caption": "Mean attention pattern of every head over random task sequences (first seed)."},
        {"path": model_file("figures/attention/offset_profile.png"),
         "dir": model_file("figures/attention"), "appendix": True,
         "caption": "Mean attention by offset (query position − key position), per head (first seed)."},
    ] + [
        {"path": model_file(f"figures/attention/prompt{k}_{p['prompt'].upper()}{suffix}.png"),
         "dir": model_file("figures/attention"),
         # one 12-letter prompt in the body for the models with more than one layer; the
         # other prompts and models in the appendix
         "appendix": True if k != BODY_PROMPT else ONE_LAYER_VARIANTS,
         "caption": f"Attention of the {which} heads on the prompt {p['prompt'].upper()} (first seed): "
         "teacher-forced on the correct sequence (prompt + correct completion) when the prompt has "
         "one, otherwise (out of distribution) on the model's greedy completion; the title says "
         "which. Dashed lines mark the end of the prompt; completion letters are red."}
        for k, p in enumerate(config["behaviour"]["prompts"])
        # the last layer of every variant; earlier layers only when every variant has them
        for suffix, which in ([(f"_L{l}", f"layer-{l}") for l in range(
            min(v.get("n_layers", 1) for v in config["variants"].values()) - 1)]
            + [("", "last layer's")])
    ],
)

report_section(
    name="failure_modes",
    title="Failure modes: every repetition pattern of a block",
    order=50,
    text="Each of the block's repetition patterns (set partitions of its positions) is sampled and "
    "scored; the error mass (probability under the training distribution × error rate) ranks the "
    "failures by how much they cost on real data.",
    figures=[{"path": f"{RESULTS}/figures/{{model}}/failure_modes.png",
              "caption": "Patterns with the largest error mass; bars are the mean over seeds, whiskers min–max."}],
    tables=[{"path": aggregated_table("failure_modes", summary=True), "appendix": True,
             "caption": "The 12 patterns with the lowest teacher-forced accuracy (mean over seeds).",
             "where": {"metric": "teacher_forced_acc"},
             "sort": {"by": "mean", "ascending": True},
             "columns": ["pattern", "n_distinct", "adjacent_repeats", "n", "mean", "std", "min", "max"],
             "max_rows": 12}],
)
