# Behaviour: prompt suite, failure modes, attention patterns, head scores and roles.
# No `conda:` directive, for the reason given in train.smk.

model_analysis(
    "behaviour",
    "behaviour",
    input={"model": model_file(MODEL_FILE), "settings": settings_file("behaviour")},
    output={"completions": model_file("completions.csv"),
            "failure_modes": model_file("failure_modes.csv"),
            "attention": model_file("attention.npz"), "head_scores": model_file("head_scores.csv"),
            "behaviour": model_file("behaviour.csv")},
    mem_mb=3000,
    runtime=20,
)


rule attention_figures:
    input:
        attention=model_file("attention.npz"),
    output:
        out_dir=directory(model_file("figures/attention")),
    params:
        paths=named_paths,
    log:
        "logs/attention_figures/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/attention_figures/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        command_line("attention-figures")


from inductionlab.formatting.labels import ROLE_ABBREVIATIONS, ROLE_LABELS

FAILURE_ROWS = 4  # the hardest repetition patterns of each model the body shows

# the figure panels' role abbreviations, each with the display form it stands for
BEHAVIOUR_WORDS = section_prose(
    "prose.yaml", **config["behaviour"]["roles"], failure_rows=FAILURE_ROWS,
    role_abbreviations=[(short, ROLE_LABELS[role]) for role, short in ROLE_ABBREVIATIONS.items()
                        if short != ROLE_LABELS[role]])

report_section(
    name="behaviour",
    title=BEHAVIOUR_WORDS["behaviour_title"],
    chapter=BEHAVIOUR_WORDS["chapter_title"],
    order=40,
    template="section.html.j2",
    tables=[
        {"path": aggregated_table("completions"), "caption": BEHAVIOUR_WORDS["behaviour_table1"]},
        {"path": aggregated_table("completions"), "appendix": True,
         "caption": BEHAVIOUR_WORDS["behaviour_table2"],
         "columns": ["prompt", "seed", "completion", "expected", "write_up_completion", "accuracy"]},
        {"path": aggregated_table("behaviour", summary=True),
         "caption": BEHAVIOUR_WORDS["behaviour_table3"],
         "spread": {"index": ["metric"]},
         "where": {"metric": [f"random{kind}_len{L}_{m}"
                              for L in config["behaviour"]["random_prompt_lengths"]
                              for kind in ("", "_distinct") for m in ("acc_mean", "exact")]
                   + ["repeat_when_correct_rate", "ood_two_blocks_follows_first",
                      "ood_two_blocks_follows_second", "ood_two_blocks_repeat_rate",
                      "shared_prefix_follows_first", "shared_prefix_follows_nearest"]}},
        {"path": aggregated_table("behaviour", summary=True), "appendix": True,
         "caption": BEHAVIOUR_WORDS["behaviour_period_table"],
         "spread": {"index": ["metric"]},
         "where": {"metric": [f"period{n}_acc" for n in config["behaviour"]["period_lengths"]]}},
        {"path": aggregated_table("behaviour", summary=True), "appendix": True,
         "caption": BEHAVIOUR_WORDS["behaviour_table4"],
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

report_section(
    name="attention",
    title=BEHAVIOUR_WORDS["attention_title"],
    order=30,
    text=BEHAVIOUR_WORDS["attention_text"],
    tables=[
        {"path": aggregated_table("head_scores"),
         "caption": BEHAVIOUR_WORDS["attention_table1"],
         "columns": [f"{s}_chance" for s in ("induction", "nearest_copy", "first_block",
                                              "first_token", "previous_token", "local",
                                              "prefix_matching")],
         "max_rows": 1, "shared": True},
        {"path": aggregated_table("head_scores"),
         "caption": BEHAVIOUR_WORDS["attention_table2"],
         "rank": {"within": ["seed", "layer"], "by": "induction",
                  "values": ["induction", "induction_control", "induction_content", "first_block",
                             "copying"]}},
        {"path": aggregated_table("head_scores"), "appendix": True,
         "caption": BEHAVIOUR_WORDS["attention_table3"],
         "columns": ["seed", "layer", "head", "induction", "induction_low", "induction_high",
                     "induction_control", "nearest_copy", "nearest_copy_control", "first_block",
                     "first_block_control", "first_token", "previous_token", "local",
                     "prefix_matching", "copying", "roles"]},
    ],
    figures=[
        {"path": figure_path("attention", "models"), "caption": BEHAVIOUR_WORDS["attention_models_figure"]},
        {"path": figure_path("attention_seeds"), "appendix": True,
         "caption": BEHAVIOUR_WORDS["attention_figure1"]},
        {"path": model_file("figures/attention/mean.png"), "dir": model_file("figures/attention"),
         "appendix": True,
         "caption": BEHAVIOUR_WORDS["attention_figure2"]},
        {"path": model_file("figures/attention/offset_profile.png"),
         "dir": model_file("figures/attention"), "appendix": True,
         "caption": BEHAVIOUR_WORDS["attention_figure3"]},
    ] + [
        {"path": model_file(f"figures/attention/prompt{k}_{p['prompt'].upper()}{suffix}.png"),
         "dir": model_file("figures/attention"),
         "appendix": True,
         "caption": BEHAVIOUR_WORDS["attention_prompt_figure"].format(which=which,
                                                                      prompt=p["prompt"].upper())}
        for k, p in enumerate(config["behaviour"]["prompts"])
        # the last layer of every variant; earlier layers only when every variant has them
        for suffix, which in ([(f"_L{l}", f"layer-{l}") for l in range(
            min(v.get("n_layers", 1) for v in config["variants"].values()) - 1)]
            + [("", "last layer's")])
    ],
)

report_section(
    name="failure_modes",
    title=BEHAVIOUR_WORDS["failure_modes_title"],
    chapter=BEHAVIOUR_WORDS["chapter_title"],
    order=41,
    text=BEHAVIOUR_WORDS["failure_modes_text"],
    figures=[{"path": figure_path("failure_modes"), "appendix": True,
              "caption": BEHAVIOUR_WORDS["failure_modes_figure1"]}],
    tables=[{"path": aggregated_table("failure_modes", summary=True),
             "caption": BEHAVIOUR_WORDS["failure_modes_table1"],
             "where": {"metric": "teacher_forced_acc"},
             "sort": {"by": "mean", "ascending": True},
             "columns": ["pattern", "n_distinct", "adjacent_repeats", "n", "mean", "std", "min", "max"],
             "max_rows": FAILURE_ROWS}],
)


@published
def behaviour_outputs():
    files = ["completions.csv", "failure_modes.csv", "attention.npz", "head_scores.csv",
             "behaviour.csv"]
    return [path for name in files for path in per_model(name)] + seed_figures("figures/attention")
