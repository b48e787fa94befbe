# The formation study: when and how does an induction head form?
#
# On the write-up's task every copy sits at a fixed position, so a head that looks at a
# position solves it as well as one that looks for a copy. The study retrains the
# write-up's variants on a task where the copy moves (tasks: variable_period: the period
# is drawn per sequence), for every seed, registers them as a claim family, and reads per
# model from the generic stages' tables whether a previous-token head and an induction
# head formed, whether K-composition builds it, whether it generalises, and when it
# formed (formation.csv). Settings: config["experiments"]["formation"] (schema.yaml);
# words: prose.yaml.
from inductionlab.stages.dynamics.phase_change import MAX_SPAN as FM_MAX_SPAN, MIN_R2 as FM_MIN_R2
from inductionlab.stages.dynamics.phase_change import SAME_TIME_FACTOR as FM_SAME_TIME_FACTOR
from inductionlab.experiments.formation.answers import (HALF as FM_HALF, QUESTIONS as FM_QUESTIONS,
                                                        SOLVES as FM_SOLVES)
from inductionlab.experiments.formation.settings import model_names
from inductionlab.core.tasks import resolve_task, task_from_dict
from inductionlab.stages.behaviour.period_test import period_test_lengths

FM = config["experiments"]["formation"]
FM_TASK = FM["task"]
FM_MODELS = {v: register_model(name, v, task=FM_TASK) for v, name in model_names(FM).items()}
FM_FAMILY = register_family("formation", f"task: {FM_TASK}", **FM_MODELS)
# each retrained model beside the variant it retrains
FM_SIDE_BY_SIDE = [name for v, m in FM_MODELS.items() for name in (v, m)]
FM_TABLE = aggregated_table("formation", models=FM_SIDE_BY_SIDE)
FM_SUMMARY = aggregated_table("formation", summary=True, models=FM_SIDE_BY_SIDE)


rule formation_table:
    input:
        # the heads' roles: the stacked table, where the head-role rule is applied
        head_scores=aggregated_table("head_scores"),
        composition=model_file("composition.csv"),
        ablations=model_file("ablations.csv"),
        behaviour=model_file("behaviour.csv"),
        phase_change=model_file("phase_change.csv"),
    output:
        table=model_file("formation.csv"),
    wildcard_constraints:
        model="|".join(FM_SIDE_BY_SIDE),
    params:
        paths=named_paths,
    log:
        "logs/formation/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/formation/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        command_line("formation")


FM_ANSWERS = f"{RESULTS}/tables/formation_answers.csv"
FM_VERDICTS = f"{RESULTS}/tables/formation_verdicts.csv"


localrules:
    formation_answers,


rule formation_answers:
    input:
        table=FM_TABLE,
        # whether a head formed, each fit's phase-change verdict and the coincidence: decided
        phase_change=aggregated_table("phase_change"),
        settings=settings_file("formation"),
    output:
        verdicts=FM_VERDICTS,
        answers=FM_ANSWERS,
    params:
        paths=named_paths,
    log:
        "logs/formation/answers.log",
    benchmark:
        "results/benchmarks/formation/answers.tsv"
    shell:
        command_line("formation-answers")


# every length the period test measures on the study's models: the configured ones and the
# untrained periods on either side of the task's range
FM_TASK_SPEC = task_from_dict(resolve_task(config, FM_TASK))
FM_PERIODS = period_test_lengths(config["behaviour"]["period_lengths"], FM_TASK_SPEC,
                                 FM_TASK_SPEC.seq_len)
FM_VALUES = dict(task=FM_TASK, variants=list(FM_MODELS), models=list(FM_MODELS.values()),
                 periods=FM_PERIODS, half=FM_HALF, solves=FM_SOLVES, max_span=FM_MAX_SPAN,
                 min_r2=FM_MIN_R2, same_time_factor=FM_SAME_TIME_FACTOR)
FM_WORDS = section_prose("prose.yaml", model="", **FM_VALUES)
FM_METRICS = {
    "task": ["loss_pred", "floor_loss_pred", "floor_scored_loss_pred", "acc_pred",
             "floor_acc_pred", "floor_scored_acc_pred", "write_up_loss_pred",
             "write_up_floor_loss_pred", "write_up_acc_pred", "write_up_floor_acc_pred"],
    "periods": [f"period{n}_{what}" for n in FM_PERIODS for what in ("acc", "task_acc")],
    "heads": ["previous_token", "previous_token_chance", "previous_token_head", "induction",
              "induction_control", "induction_content", "induction_chance", "induction_head",
              "positional_induction_head", "k_composition", "k_composition_baseline"]
    # every layer-0 head's removal from the last layer's keys, then all of layer 0's
    + [f"keys_left_L0H{h}" for h in range(max(model_settings(m)["n_heads"] for m in FM_SIDE_BY_SIDE))]
    + ["keys_ablation_left"],
    "timing": ["loss_midpoint", "loss_span", "content_midpoint", "content_span", "midpoint_gap"],
}

report_section(
    name="formation",
    title=FM_WORDS["title"],
    scope="study",
    order=84,
    text=FM_WORDS["text"],
    tables=[
        {"path": FM_ANSWERS, "caption": FM_WORDS["answers_table"],
         "where": {"metric": list(FM_QUESTIONS.values())}, "columns": ["variant", "metric", "text"]},
        {"path": FM_VERDICTS, "caption": FM_WORDS["verdicts_table"], "appendix": True,
         "columns": ["variant", "seed", "question", "status", "value", "low", "high", "note"]},
    ] + [
        # the values the answers were read from, beside the retrained variants: the task, the
        # period test per length, the heads (every layer-0 head's removal from the keys) and
        # the timing, in the appendix
        {"path": FM_SUMMARY, "caption": FM_WORDS[f"{part}_table"], "models": FM_SIDE_BY_SIDE,
         "spread": {"index": ["metric"], "metrics": metrics}, "appendix": True}
        for part, metrics in FM_METRICS.items()
    ] + [
    ],
    # what each retrained model does, whether or not it built the textbook circuit: which
    # components copy or suppress the letter k back, and when its loss and best head moved
    figures=[{"path": figure_path(name).format(model=m), "caption": f"{m}: {FM_WORDS[name]}",
              "appendix": True}
             for m in FM_MODELS.values() for name in ("offset_profile", "phase_change")]
    + [{"path": figure_path("attention_seeds").format(model=m), "appendix": True,
        "caption": f"{m}: {FM_WORDS['attention_figure']}"} for m in FM_MODELS.values()],
)

# the answer, one paragraph per retrained model, from its table: on page 1
for _model in FM_MODELS.values():
    report_highlight(FM_ANSWERS, section_prose("prose.yaml", model=_model, **FM_VALUES)["highlight"],
                     front=True)
