# Offset attribution: the logits of every model split exactly into the direct path, each
# head and each chain of heads (V-composition), each term's effect on the letter at its
# source averaged by offset k (query − source), on the task and the control sample; and
# the write-up's algorithms (algorithms.yaml, beside these rules) as programs scored
# against the model.
# No `conda:` directive, for the reason given in train.smk.


rule offsets:
    input:
        model=model_file(MODEL_FILE),
        behaviour_settings=settings_file("behaviour"),
        # the head-role rule's roles name the paths: read from the stacked table, where the
        # rule is applied
        head_scores=aggregated_table("head_scores"),
        algorithms=workflow.source_path("algorithms.yaml"),
    output:
        profile=model_file("offset_profile.csv"),
        programs=model_file("algorithm_fit.csv"),
    params:
        paths=named_paths,
    log:
        "logs/offsets/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/offsets/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    shell:
        command_line("offsets", threads=True)


# stacked for the claims (the algorithm groups read it) and the offset-profile figure
aggregated_table("offset_profile")

OFFSETS_WORDS = section_prose("prose.yaml")

report_section(
    name="offsets",
    title=OFFSETS_WORDS["offsets_title"],
    order=80,
    text=OFFSETS_WORDS["offsets_text"],
    tables=[
        {"path": aggregated_table("algorithm_fit", summary=True),
         "caption": OFFSETS_WORDS["offsets_table1"],
         "spread": {"index": ["program", "sample"],
                    "metrics": ["agreement", "kl", "kl_explained", "accuracy"]}},
    ],
    figures=[
        {"path": figure_path("offset_profile", "models"), "caption": OFFSETS_WORDS["offsets_models_figure"]},
        {"path": figure_path("offset_profile"), "appendix": True,
         "caption": OFFSETS_WORDS["offsets_figure1"]},
    ],
)
