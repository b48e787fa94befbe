# Training: one job per (model, seed), then the named weight arrays.
#
# `snakemake --lint` asks for a `conda:` directive on every rule. The rules run the
# `inductionlab` console script of the environment the workflow itself runs in
# (installed with pip or from environment.yml); a per-rule conda environment
# would have to install this package from the source tree, which --use-conda
# does not see. So there is none, on purpose.


def train_resources(n_seeds=1):
    """Cluster requests of one training job (a GPU when the device is CUDA)."""
    res = {"mem_mb": config["train"]["mem_mb"] * n_seeds,
           "runtime": config["train"]["runtime_min"] * n_seeds}
    if config["device"] == "cuda":
        res["gpu"] = 1
    return res


SEEDS_PER_JOB = config["train"]["seeds_per_job"]
# the models trained one seed a job: every model, or with seeds_per_job > 1 those whose
# training clamps or freezes a part (a stacked run trains none of them)
ONE_SEED_A_JOB = [m for m in MODELS if SEEDS_PER_JOB == 1 or (MODELS[m] and MODELS[m].intervention)]

if ONE_SEED_A_JOB:

    # The resolved spec is a parameter: a changed spec reruns this model's training, which
    # writes it to spec.json first (no job of its own for a JSON file).
    rule train:
        input:
            # a clamp to a trained reference: the reference model's model.pt (same seed)
            reference=reference_model_file,
        output:
            spec=model_file("spec.json"),
            model=model_file(MODEL_FILE),
            log_csv=model_file("train_log.csv"),
            checkpoints=checkpoint_files(),
        params:
            out_dir=lambda wildcards, output: os.path.dirname(output.model),
            spec=model_spec_json,
            reference=reference_option,
        log:
            "logs/train/{model}/seed{seed}.log",
        benchmark:
            "results/benchmarks/train/{model}/seed{seed}.tsv"
        wildcard_constraints:
            model="|".join(ONE_SEED_A_JOB),
        threads: config["train"]["threads"]
        resources:
            **train_resources(),
        shell:
            "inductionlab train --document {params.spec:q} --spec {output.spec:q} "
            "--out-dir {params.out_dir} --threads {threads} {params.reference} > {log} 2>&1"

if SEEDS_PER_JOB > 1:
    # Seeds of a model in groups of `seeds_per_job`, each group one stacked model in
    # one job: one rule per (model, group), since a rule's outputs share its wildcards.
    for _variant in [m for m in MODELS if m not in ONE_SEED_A_JOB]:
        for _group in [SEEDS[i : i + SEEDS_PER_JOB] for i in range(0, len(SEEDS), SEEDS_PER_JOB)]:
            _files = lambda name, v=_variant, g=_group: [
                f"{RESULTS}/{v}/seed{s}/{name}" for s in g
            ]
            _tag = f"{_variant}/seeds{'-'.join(map(str, _group))}"

            rule:
                name:
                    f"train_{_variant}_seeds{'_'.join(map(str, _group))}"
                output:
                    specs=_files("spec.json"),
                    models=_files(MODEL_FILE),
                    log_csvs=_files("train_log.csv"),
                    checkpoints=[c for s in _group for c in checkpoint_files(model_folder(_variant, s))],
                params:
                    documents=[spec_json(_variant, s) for s in _group],
                log:
                    f"logs/train/{_tag}.log",
                benchmark:
                    f"results/benchmarks/train/{_tag}.tsv"
                threads: config["train"]["threads"]
                resources:
                    **train_resources(len(_group)),
                shell:
                    "inductionlab train-stacked --specs {output.specs:q} --documents "
                    "{params.documents:q} --threads {threads} > {log} 2>&1"


model_analysis(
    "extract_weights",
    "extract-weights",
    # the published spec.json checked against the model's own: a file edited by hand is
    # refused here, never trained
    input={"model": model_file(MODEL_FILE), "spec": model_file("spec.json")},
    output={"out": model_file("weights.npz")},
    runtime=5,
)


TRAIN_WORDS = section_prose("prose.yaml")

report_section(
    name="training",
    title=TRAIN_WORDS["training_title"],
    order=10,
    text=TRAIN_WORDS["training_text"],
    figures=[{"path": figure_path("training", "models"), "caption": TRAIN_WORDS["training_models_figure"]},
             {"path": figure_path("training"), "appendix": True,
              "caption": TRAIN_WORDS["training_figure1"]}],
    tables=[{"path": aggregated_table("train_log"),
             "caption": TRAIN_WORDS["training_table1"], "appendix": True,
             "where": {"step": config["train"]["steps"]},
             "columns": ["seed", "val_loss_all", "val_loss_pred", "val_acc_pred", "elapsed_s"]}],
)


@published
def training_outputs():
    return (per_model("spec.json") + per_model(MODEL_FILE) + per_model("train_log.csv")
            + [path for model in MODELS for seed in SEEDS
               for path in checkpoint_files(model_folder(model, seed))])


@published
def all_weights():
    return per_model("weights.npz")
