# Readings: what the summary reads of every model, from the stacked tables: its best
# head's content-or-position reading beside the period test, and its algorithm as measured
# (the report puts them in words); and the period test's figure of page 1 (none when the
# config asks for no period test).

READINGS = {"content_or_position": f"{RESULTS}/tables/content_or_position.csv",
            "algorithms": f"{RESULTS}/tables/algorithm_readings.csv"}
PERIOD_FIGURE = ([figure_path("period_test", "models")]
                 if config["behaviour"]["period_lengths"] else [])


localrules:
    readings,


rule readings:
    input:
        head_scores=aggregated_table("head_scores"),
        behaviour=aggregated_table("behaviour"),
        offset_profile=aggregated_table("offset_profile"),
        algorithm_fit=aggregated_table("algorithm_fit"),
    output:
        content_or_position=READINGS["content_or_position"],
        algorithms=READINGS["algorithms"],
    params:
        paths=named_paths,
    log:
        "logs/readings.log",
    benchmark:
        "results/benchmarks/readings.tsv"
    shell:
        command_line("readings")


@published
def readings_outputs():
    return [*READINGS.values(), *PERIOD_FIGURE]
