# Training dynamics: every checkpoint of a model scored with the functions the circuits
# and behaviour stages apply to the final model; per-token losses on one fixed set for a
# joint PCA across all models; phase-change steps per model (stacked by `aggregate`).
# No `conda:` directive, for the reason given in train.smk.


model_analysis(
    "dynamics",
    "dynamics",
    input={"model": model_file(MODEL_FILE), "behaviour_settings": settings_file("behaviour"),
           "settings": settings_file("dynamics")},
    options={"checkpoints": f"{model_folder()}/{CHECKPOINTS}"},
    extra_input=checkpoint_files(),
    output={"dynamics": model_file("dynamics.csv"), "losses": model_file("per_token_losses.npz"),
            "phase_change": model_file("phase_change.csv")},
    mem_mb=2000,
    runtime=30,
)


rule dynamics_figures:
    input:
        dynamics=model_file("dynamics.csv"),
        # whether an induction head formed: the stacked table, where the head-role rule is
        # applied
        phase_change=aggregated_table("phase_change"),
        settings=settings_file("dynamics"),
    output:
        out_dir=directory(model_file("figures/dynamics")),
    params:
        paths=named_paths,
    log:
        "logs/dynamics_figures/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/dynamics_figures/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        command_line("dynamics-figures")


rule per_token_loss_pca:
    input:
        losses=per_model("per_token_losses.npz"),
    output:
        table=f"{RESULTS}/tables/per_token_loss_pca.csv",
        figure=f"{RESULTS}/figures/per_token_loss_pca.png",
    params:
        paths=named_paths,
    log:
        "logs/per_token_loss_pca.log",
    benchmark:
        "results/benchmarks/per_token_loss_pca.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        command_line("per-token-loss-pca")


DYNAMICS_WORDS = section_prose(
    "prose.yaml", sample=config["behaviour"]["n_sequences"],
    n_sequences=min(config["dynamics"]["n_sequences"], config["behaviour"]["n_sequences"]))

report_section(
    name="dynamics",
    title=DYNAMICS_WORDS["dynamics_title"],
    order=70,
    text=DYNAMICS_WORDS["dynamics_text"],
    tables=[{"path": aggregated_table("phase_change"),
             "caption": DYNAMICS_WORDS["dynamics_models_table"],
             "where": {"metric": ["loss_pred", "induction_content"]},
             "rank": {"within": ["seed", "metric"], "by": "midpoint",
                      "values": ["midpoint", "span", "r2"]},
             "columns": ["metric", "midpoint", "span", "r2"]},
            {"path": aggregated_table("phase_change"), "appendix": True,
             "caption": DYNAMICS_WORDS["dynamics_table1"],
             "columns": ["seed", "metric", "shape", "midpoint", "midpoint_low", "midpoint_high",
                         "span", "span_low", "span_high", "r2", "value", "low", "high"]}],
    figures=[
        {"path": figure_path("phase_change", "models"), "caption": DYNAMICS_WORDS["dynamics_models_figure"]},
        {"path": figure_path("phase_change"), "appendix": True,
         "caption": DYNAMICS_WORDS["dynamics_figure1"]},
        {"path": figure_path("dynamics"), "appendix": True,
         "caption": DYNAMICS_WORDS["dynamics_figure2"]},
        {"path": model_file("figures/dynamics/head_scores.png"), "dir": model_file("figures/dynamics"),
         "appendix": True,
         "caption": DYNAMICS_WORDS["dynamics_figure3"]},
        {"path": model_file("figures/dynamics/per_position_loss.png"),
         "dir": model_file("figures/dynamics"), "appendix": True,
         "caption": DYNAMICS_WORDS["dynamics_figure4"]},
    ],
)

report_section(
    name="per_token_loss_pca",
    title=DYNAMICS_WORDS["per_token_loss_pca_title"],
    scope="study",
    order=80,
    text=DYNAMICS_WORDS["per_token_loss_pca_text"],
    tables=[{"path": f"{RESULTS}/tables/per_token_loss_pca.csv",
             "caption": DYNAMICS_WORDS["per_token_loss_pca_table1"],
             "columns": ["explained_variance_PC1", "explained_variance_PC2"], "max_rows": 1}],
    figures=[{"path": f"{RESULTS}/figures/per_token_loss_pca.png", "appendix": True,
              "caption": DYNAMICS_WORDS["per_token_loss_pca_figure1"]}],
)


@published
def dynamics_outputs():
    files = ["dynamics.csv", "per_token_losses.npz", "phase_change.csv"]
    return [path for name in files for path in per_model(name)] + seed_figures("figures/dynamics") + [
        aggregated_table("phase_change"),
        f"{RESULTS}/tables/per_token_loss_pca.csv",
        f"{RESULTS}/figures/per_token_loss_pca.png",
    ]
