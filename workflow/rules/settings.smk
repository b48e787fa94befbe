# One JSON file per kind of job, holding only the config keys it reads
# (inductionlab.stages.settings): a change to a key reruns only the jobs that read it.
# No `conda:` directive, for the reason given in train.smk.


localrules:
    stage_settings,


rule stage_settings:
    output:
        settings=f"{RESULTS}/settings/{{stage}}.json",
    params:
        settings=stage_settings_json,
    log:
        "logs/stage_settings/{stage}.log",
    benchmark:
        "results/benchmarks/stage_settings/{stage}.tsv"
    shell:
        "inductionlab write-json --out {output.settings:q} --document {params.settings:q} "
        "> {log} 2>&1"
