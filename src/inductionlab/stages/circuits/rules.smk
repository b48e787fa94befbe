# Circuits: token-space OV/QK circuits, eigenvalue positivity, K/Q/V composition and
# all eigenvalue spectra of one model, from its weights.npz (numpy only, no torch).
#
# No `conda:` directive, for the reason given in train.smk.


model_analysis(
    "circuits",
    "circuits-tables",
    input={"weights": model_file("weights.npz")},
    output={"circuits": model_file("circuits.csv"), "composition": model_file("composition.csv"),
            "eigenvalues": model_file("eigenvalues.npz")},
)


rule circuit_figures:
    input:
        weights=model_file("weights.npz"),
    output:
        out_dir=directory(model_file("figures/circuits")),
    params:
        paths=named_paths,
    log:
        "logs/circuit_figures/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/circuit_figures/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        command_line("circuit-figures")


CIRCUITS_WORDS = section_prose("prose.yaml")

report_section(
    name="circuits",
    title=CIRCUITS_WORDS["circuits_title"],
    chapter=CIRCUITS_WORDS["chapter_title"],
    order=20,
    text=CIRCUITS_WORDS["circuits_text"],
    tables=[
        {"path": aggregated_table("circuits", summary=True),
         "caption": CIRCUITS_WORDS["circuits_table1"],
         "where": {"circuit": ["direct", "ov_sum"], "metric": "positivity_real"},
         "spread": {"index": ["circuit", "layer"], "metrics": ["positivity_real"]}},
        {"path": aggregated_table("circuits"),
         "caption": CIRCUITS_WORDS["circuits_table2"],
         "where": {"circuit": "ov"},
         "rank": {"within": ["seed", "layer"], "by": "positivity_real", "values": ["positivity_real"]}},
        {"path": aggregated_table("circuits"), "appendix": True,
         "caption": CIRCUITS_WORDS["circuits_table3"],
         "where": {"circuit": "ov"},
         "pivot": {"index": ["seed"], "columns": ["layer", "head"], "values": "positivity_real",
                   "label": "OV L{}H{}"}},
        {"path": aggregated_table("circuits"), "appendix": True,
         "caption": CIRCUITS_WORDS["circuits_table4"],
         "where": {"circuit": "qk"},
         "pivot": {"index": ["seed"], "columns": ["layer", "head"], "values": "positivity_real",
                   "label": "QK L{}H{}"}},
    ],
    figures=[{"path": figure_path("spectra"), "appendix": True,
              "caption": CIRCUITS_WORDS["circuits_figure1"]},
             {"path": model_file("figures/circuits/ov.png"), "dir": model_file("figures/circuits"),
              "appendix": True,
              "caption": CIRCUITS_WORDS["circuits_figure2"]},
             {"path": model_file("figures/circuits/qk.png"), "dir": model_file("figures/circuits"),
              "appendix": True,
              "caption": CIRCUITS_WORDS["circuits_figure3"]}],
)

report_section(
    name="composition",
    title=CIRCUITS_WORDS["composition_title"],
    chapter=CIRCUITS_WORDS["chapter_title"],
    order=25,
    variants=[v for v in VARIANTS if config["variants"][v]["n_layers"] >= 2],
    text=CIRCUITS_WORDS["composition_text"],
    tables=[
        {"path": aggregated_table("composition"), "appendix": True,
         "caption": CIRCUITS_WORDS["composition_table1"],
         "where": {"kind": "K"},
         "pivot": {"index": ["seed", "src_layer", "src_head"], "columns": ["layer", "head"],
                   "values": "positivity_real", "label": "L{}H{}"}},
        {"path": aggregated_table("composition"), "appendix": True,
         "caption": CIRCUITS_WORDS["composition_table2"],
         "where": {"kind": "K"},
         "pivot": {"index": ["seed", "src_layer", "src_head"], "columns": ["layer", "head"],
                   "values": "score_minus_baseline", "label": "L{}H{}"}},
    ],
    figures=[{"path": figure_path("composition"),
              "caption": CIRCUITS_WORDS["composition_figure1"]}],
)


@published
def circuit_outputs():
    return (per_model("circuits.csv") + per_model("composition.csv") + per_model("eigenvalues.npz")
            + seed_figures("figures/circuits"))
