# Positional-table study: which of the write-up's verdicts depend on its q/k table?
#
# The write-up's models retrained with another positional table (default: the standard
# sinusoid) for every seed, and the whole claim set evaluated on them as a second family.
# The models are registered, so the generic stages train and analyse them in
# results/{model}/seed{seed}/, and the claims rule evaluates the family: the study needs
# no rule of its own. Settings: config["experiments"]["positional_table"] (keys and
# defaults: schema.yaml beside this file); words: prose.yaml.
from inductionlab.core.data import TaskConfig
from inductionlab.experiments.positional_table.analysis import variance_share
from inductionlab.experiments.positional_table.settings import model_names

PT = config["experiments"]["positional_table"]
PT_FORM = PT["pos_encoding"]
PT_MODELS = {v: register_model(name, v, pos_encoding=PT_FORM) for v, name in model_names(PT).items()}
PT_FAMILY = register_family("positional_table", f"pos_encoding: {PT_FORM}", **PT_MODELS)
PT_HEAD = model_settings(PT["variants"][0])
PT_SHARE = {form: variance_share(form, TaskConfig.from_dict(config["task"]).seq_len,
                                 PT_HEAD["d_model"] // PT_HEAD["n_heads"])
            for form in ("original", PT_FORM)}
PT_WORDS = section_prose("prose.yaml", form=PT_FORM, variants=list(PT_MODELS),
                         models=list(PT_MODELS.values()), share=PT_SHARE)

report_section(
    name="positional_table",
    title=PT_WORDS["title"],
    scope="study",
    order=86,
    text=PT_WORDS["text"],
    tables=[
        # one row per metric, a column per model: each variant beside its retrained copy
        {"path": aggregated_table("behaviour", summary=True), "caption": PT_WORDS["losses_table"],
         "models": [name for v, m in PT_MODELS.items() for name in (v, m)],
         "spread": {"index": ["metric"], "metrics": ["loss_all", "loss_pred", "acc_pred",
                                                     "icl_score", "random_distinct_len12_acc_mean"]
                    + [f"period{n}_acc" for n in config["behaviour"]["period_lengths"]]}},
    ],
    figures=[{"path": figure_path("attention_seeds").format(model=m), "appendix": True,
              "caption": f"{m}: {PT_WORDS['attention_figure']}"} for m in PT_MODELS.values()],
)
