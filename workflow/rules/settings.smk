# One JSON file per analysis stage, holding its config section and the task;
# a change to a section reruns only that stage's jobs.
# No `conda:` directive, for the reason given in train.smk.


localrules:
    stage_settings,


rule stage_settings:
    output:
        f"{RESULTS}/settings/{{stage}}.json",
    params:
        settings=stage_settings_json,
    log:
        "logs/stage_settings/{stage}.log",
    run:
        from inductionlab.atomic import write_text

        write_text(output[0], json.dumps(json.loads(params.settings), indent=2) + "\n")
