# Ablations: the write-up's composition table (queries/keys of a later layer from the
# embedding or the residual stream), each earlier head taken out of a layer's keys or
# queries, V-composition off, zero / mean / pattern-preserving head ablations and smear
# off, for every model. The list is data: config["ablations"]["entries"]. Scored on the
# behaviour stage's evaluation sample and prompt suite, so the baseline row matches it.
# No `conda:` directive, for the reason given in train.smk.


rule ablations:
    input:
        model=model_file("model.pt"),
        behaviour_settings=settings_file("behaviour"),
        settings=settings_file("ablations"),
    output:
        table=model_file("ablations.csv"),
        attention=model_file("ablated_attention.npz"),
    log:
        "logs/ablations/{variant}/seed{seed}.log",
    benchmark:
        "results/benchmarks/ablations/{variant}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30,
    shell:
        "inductionlab ablations {input.model} {input.behaviour_settings} {input.settings} "
        "--table {output.table} --attention {output.attention} --threads {threads} > {log} 2>&1"
