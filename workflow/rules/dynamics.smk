# Training dynamics: every checkpoint of a model scored with the functions the circuits
# and behaviour stages apply to the final model; per-token losses on one fixed set for a
# joint PCA across all models; phase-change steps per model and in one table.
# No `conda:` directive, for the reason given in train.smk.


localrules:
    phase_change_table,


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
        "logs/dynamics/{variant}/seed{seed}.log",
    benchmark:
        "results/benchmarks/dynamics/{variant}/seed{seed}.tsv"
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
        "logs/dynamics_figures/{variant}/seed{seed}.log",
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


rule phase_change_table:
    input:
        per_model("phase_change.csv"),
    output:
        f"{RESULTS}/tables/phase_change.csv",
    log:
        "logs/phase_change_table.log",
    shell:
        "inductionlab phase-change-table {input} --out {output} > {log} 2>&1"
