# Training dynamics: every checkpoint of a model scored with the functions the circuits
# and behaviour stages apply to the final model; per-token losses on one fixed set for a
# joint PCA across all models; phase-change steps per model (stacked by `aggregate`).
# No `conda:` directive, for the reason given in train.smk.


rule dynamics:
    input:
        model=model_file("model.pt"),
        checkpoints=model_file("checkpoints"),
        behaviour_settings=settings_file("behaviour"),
        settings=settings_file("dynamics"),
    output:
        dynamics=model_file("dynamics.csv"),
        losses=model_file("per_token_losses.npz"),
        phase_change=model_file("phase_change.csv"),
    log:
        "logs/dynamics/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/dynamics/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "inductionlab dynamics {input.model} {input.checkpoints} {input.behaviour_settings} "
        "{input.settings} --dynamics {output.dynamics} --losses {output.losses} "
        "--phase-change {output.phase_change} --threads {threads} > {log} 2>&1"


rule dynamics_figures:
    input:
        dynamics=model_file("dynamics.csv"),
        phase_change=model_file("phase_change.csv"),
        settings=settings_file("dynamics"),
    output:
        directory(model_file("figures/dynamics")),
    log:
        "logs/dynamics_figures/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/dynamics_figures/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "inductionlab dynamics-figures {input.dynamics} {input.phase_change} {output} "
        "--settings {input.settings} > {log} 2>&1"


rule per_token_loss_pca:
    input:
        per_model("per_token_losses.npz"),
    output:
        table=f"{RESULTS}/tables/per_token_loss_pca.csv",
        figure=f"{RESULTS}/figures/per_token_loss_pca.png",
    log:
        "logs/per_token_loss_pca.log",
    benchmark:
        "results/benchmarks/per_token_loss_pca.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "inductionlab per-token-loss-pca {input} --table {output.table} "
        "--figure {output.figure} > {log} 2>&1"


report_section(
    name="dynamics",
    title="Training dynamics",
    order=70,
    text="Every checkpoint scored with the functions applied to the final model. Two phase-change "
    "detectors per seed. steepest_drop_loss_pred is the step at which the predictable-target loss, "
    "interpolated in u = ln(step + 1) and smoothed with a Gaussian (sd dynamics.drop_smoothing in "
    "u), falls fastest per unit of u (value: that rate in nats; 'never' below "
    "dynamics.min_drop_rate). induction_rise is the first checkpoint at which the best head's "
    "induction score (attention on every earlier copy of the token to be predicted; best over the "
    "heads of the layers that can form an induction head: layer >= 1, or a layer with smeared "
    "keys) reaches chance + dynamics.induction_rise_fraction x (final - chance); chance is the "
    "score of uniform causal attention on the same queries and keys, final the best score at the "
    "last checkpoint (value: the best score there; layer/head: that head). When final - chance is "
    "below dynamics.min_induction_gain, or no layer can form an induction head, no induction head "
    "formed: the step reads 'none formed' and the note gives the numbers.",
    tables=[{"path": aggregated_table("phase_change"),
             "caption": "Phase-change steps per seed, with the chance level of the induction score "
             "and, where a detector found no step, why.",
             "columns": ["seed", "metric", "step", "value", "chance", "layer", "head", "note"]}],
    figures=[
        {"path": f"{RESULTS}/figures/{{model}}/phase_change.png",
         "caption": "Phase change per seed: predictable-target loss (left) and the best head's "
         "induction score with its chance level (right) over training, one colour per seed; "
         "vertical lines in the seed's colour mark its steepest loss drop (dashed) and its "
         "induction rise (dotted); a seed whose detector found no step says so in the legend."},
        {"path": f"{RESULTS}/figures/{{model}}/dynamics.png",
         "caption": "Predictable loss, ICL score and the largest induction and previous-token "
         "scores of any head over training, with their chance levels: mean over seeds, band "
         "min–max."},
        {"path": model_file("figures/dynamics/head_scores.png"), "dir": model_file("figures/dynamics"),
         "appendix": True,
         "caption": "Per-head scores over training, with chance levels (first seed)."},
        {"path": model_file("figures/dynamics/per_position_loss.png"),
         "dir": model_file("figures/dynamics"), "appendix": True,
         "caption": "Per-position validation loss over training (first seed)."},
    ],
)

report_section(
    name="per_token_loss_pca",
    title="Per-token loss PCA across all models",
    scope="study",
    order=80,
    text="One PCA of the per-token loss vectors (a fixed evaluation set shared by every model) of "
    "every checkpoint of every model; each line is one model's trajectory through training.",
    tables=[{"path": f"{RESULTS}/tables/per_token_loss_pca.csv",
             "caption": "Explained variance ratio of the first two components.",
             "columns": ["explained_variance_PC1", "explained_variance_PC2"], "max_rows": 1}],
    figures=[{"path": f"{RESULTS}/figures/per_token_loss_pca.png",
              "caption": "Trajectories on PC1/PC2, coloured by variant."}],
)
