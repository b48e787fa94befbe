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
        "logs/behaviour/{variant}/seed{seed}.log",
    benchmark:
        "results/benchmarks/behaviour/{variant}/seed{seed}.tsv"
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
        "logs/attention_figures/{variant}/seed{seed}.log",
    shell:
        "inductionlab attention-figures {input} {output} > {log} 2>&1"
