# Positional shortcut: can one layer solve the task with a learned positional table?
#
# With a fixed table the position–position term p_i·p_j of the score is fixed, so one
# layer cannot learn "attend 5 back". The base variant with pos_encoding: learned is a
# registered model (trained and analysed by the generic stages); this file adds its own
# analysis of it and of the compared variants (results/{model}/seed{seed}/positional_
# shortcut*.csv, stacked into results/tables/), two figures and a section; its claim
# (claims.yaml) is evaluated with the workflow's. Everything of the experiment is in this
# folder: settings config["experiments"]["positional_shortcut"] (keys and defaults:
# schema.yaml), words prose.yaml, the tables, analysis, figures and command its rules
# run. No `conda:` directive, for the reason in the train stage's rules.smk.
from inductionlab.core.data import TaskConfig
from inductionlab.experiments.positional_shortcut.figures import OFFSETS_FIGURE, POSITIONS_FIGURE
from inductionlab.experiments.positional_shortcut.tables import metric_names
from inductionlab.experiments.positional_shortcut.settings import learned_model_name

PS = config["experiments"]["positional_shortcut"]
PS_LEARNED = register_model(learned_model_name(PS), PS["base_variant"],
                            pos_encoding="learned")
PS_COMPARED = [v for v in PS["compare"] if v in VARIANTS]
PS_SKIPPED = [v for v in PS["compare"] if v not in VARIANTS]
PS_MODELS = [PS_LEARNED] + PS_COMPARED
PS_BLOCK = TaskConfig.from_dict(config["task"]).block_len
PS_OFFSET = PS_BLOCK - 1  # position i predicts token i + 1, the token PS_OFFSET back
PS_METRICS = metric_names(TaskConfig.from_dict(config["task"]), PS["prompt_len"])
PS_TABLES = {name: aggregated_table(name, models=PS_MODELS) for name in
             ["positional_shortcut", "positional_shortcut_offsets",
              "positional_shortcut_completions", "positional_shortcut_positions"]}


rule positional_shortcut_analysis:
    input:
        model=model_file(MODEL_FILE),
        settings=settings_file("positional_shortcut"),
    output:
        metrics=model_file("positional_shortcut.csv"),
        offsets=model_file("positional_shortcut_offsets.csv"),
        completions=model_file("positional_shortcut_completions.csv"),
        positions=model_file("positional_shortcut_positions.csv"),
    wildcard_constraints:
        model="|".join(PS_MODELS),
    params:
        paths=named_paths,
    log:
        "logs/positional_shortcut/analysis/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/positional_shortcut/analysis/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    shell:
        command_line("positional-shortcut", threads=True)


# its two figures, declared with their inputs in figures.py, drawn by the figure rule
PS_FIGURES = {name: figure_path(name, "study") for name in (OFFSETS_FIGURE, POSITIONS_FIGURE)}


PS_WORDS = section_prose("prose.yaml", learned=PS_LEARNED,
                         base=PS["base_variant"], compared=PS_COMPARED, skipped=PS_SKIPPED,
                         offset=PS_OFFSET, block=PS_BLOCK, prompt_len=PS["prompt_len"],
                         first_seed=FIRST_SEED)
PS_SUMMARY = aggregated_table("positional_shortcut", summary=True, models=PS_MODELS)

report_section(
    name="positional_shortcut",
    title=PS_WORDS["title"],
    scope="study",
    order=85,
    text=PS_WORDS["text"],
    tables=[
        {"path": PS_SUMMARY, "caption": PS_WORDS["task_table"],
         "spread": {"index": ["variant"], "metrics": PS_METRICS["task"]}},
        {"path": PS_SUMMARY, "caption": PS_WORDS["mechanism_table"],
         "spread": {"index": ["variant"], "metrics": PS_METRICS["mechanism"]}},
        {"path": PS_TABLES["positional_shortcut_offsets"], "caption": PS_WORDS["offsets_table"],
         "appendix": True,
         "where": {"offset": PS_OFFSET},
         "pivot": {"index": ["variant", "seed"], "columns": ["layer", "head"],
                   "values": "attention", "label": "L{}H{}"}},
        # the induction score against its positional control, per model: a content part
        # about 0 is attention earned by position
        {"path": aggregated_table("head_scores"), "caption": PS_WORDS["heads_table"],
         "where": {"variant": PS_MODELS},
         "rank": {"within": ["variant", "seed", "layer"], "by": "induction",
                  "values": ["induction", "induction_control", "induction_content",
                             "first_block", "first_block_control"], "top": 1}},
        {"path": PS_TABLES["positional_shortcut_completions"], "appendix": True,
         "caption": PS_WORDS["completions_table"], "where": {"seed": FIRST_SEED},
         "columns": ["variant", "prompt", "completion", "expected", "accuracy"]},
    ],
    figures=[
        {"path": PS_FIGURES[OFFSETS_FIGURE], "caption": PS_WORDS["offsets_figure"]},
        {"path": PS_FIGURES[POSITIONS_FIGURE], "caption": PS_WORDS["positions_figure"],
         "appendix": True},
    ],
)

# losses and accuracies from the behaviour sample, as in the headline table; the
# experiment's own measures from its table
report_highlight([aggregated_table("behaviour", summary=True), PS_SUMMARY], PS_WORDS["highlight"])
