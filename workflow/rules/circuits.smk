# Circuits: token-space OV/QK circuits, eigenvalue positivity, K/Q/V composition and
# all eigenvalue spectra of one model, from its weights.npz (numpy only, no torch).
#
# No `conda:` directive, for the reason given in train.smk.


rule circuits:
    input:
        model_file("weights.npz"),
    output:
        circuits=model_file("circuits.csv"),
        composition=model_file("composition.csv"),
        eigenvalues=model_file("eigenvalues.npz"),
    log:
        "logs/circuits/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/circuits/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "inductionlab circuits-tables {input} {output.circuits} {output.composition} "
        "{output.eigenvalues} > {log} 2>&1"


rule circuit_figures:
    input:
        model_file("weights.npz"),
    output:
        directory(model_file("figures/circuits")),
    log:
        "logs/circuit_figures/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/circuit_figures/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "inductionlab circuit-figures {input} {output} > {log} 2>&1"


report_section(
    name="circuits",
    title="Circuits: eigenvalue positivity",
    order=20,
    text="Eigenvalue positivity Σλ/Σ|λ| of token-space circuits: +1 copies the source token, "
    "−1 suppresses it. Heads are numbered from 0 (L0H2 = layer 0, head 2); head numbers are "
    "not comparable across seeds, so per-head values are shown per seed (appendix) or aligned by "
    "rank: within each seed and layer the heads sorted from most to least positive.",
    tables=[
        {"path": aggregated_table("circuits", summary=True),
         "caption": "Direct path and OV sum per layer: mean ± std [min, max] over seeds.",
         "where": {"circuit": ["direct", "ov_sum"], "metric": "positivity_real"},
         "spread": {"index": ["circuit", "layer"], "metrics": ["positivity_real"]}},
        {"path": aggregated_table("circuits"),
         "caption": "OV positivity of the heads aligned by rank: within each seed and layer the "
         "heads sorted from most positive (rank 1) down, then mean ± std [min, max] over seeds "
         "of each rank.",
         "where": {"circuit": "ov"},
         "rank": {"within": ["seed", "layer"], "by": "positivity_real", "values": ["positivity_real"]}},
        {"path": aggregated_table("circuits"), "appendix": True,
         "caption": "OV positivity of every head, per seed (rows: seeds; columns: heads).",
         "where": {"circuit": "ov"},
         "pivot": {"index": ["seed"], "columns": ["layer", "head"], "values": "positivity_real",
                   "label": "OV L{}H{}"}},
        {"path": aggregated_table("circuits"), "appendix": True,
         "caption": "QK positivity (content part) of every head, per seed.",
         "where": {"circuit": "qk"},
         "pivot": {"index": ["seed"], "columns": ["layer", "head"], "values": "positivity_real",
                   "label": "QK L{}H{}"}},
    ],
    figures=[{"path": f"{RESULTS}/figures/{{model}}/spectra.png", "appendix": True,
              "caption": "Nonzero eigenvalues of the direct path and the OV circuits in the complex plane."},
             {"path": model_file("figures/circuits/ov.png"), "dir": model_file("figures/circuits"),
              "appendix": True,
              "caption": "OV circuit W_E W_V W_O W_U of every head (first seed): row = the token the "
              "head attends to, column = the logit it raises (red) or lowers (blue). A copying head "
              "has a red diagonal (positivity near +1), an anti-copying head a blue one. Each panel "
              "is scaled by its largest |entry|, given in its title."},
             {"path": model_file("figures/circuits/qk.png"), "dir": model_file("figures/circuits"),
              "appendix": True,
              "caption": "QK circuit W_E W_Q W_Kᵀ W_Eᵀ of every head (first seed; content part, the "
              "positional term left out): row = query token, column = key token; red: the query "
              "attends more to that key token. Each panel is scaled by its largest |entry|."}],
)

report_section(
    name="composition",
    title="Composition between layers",
    order=25,
    variants=[v for v in VARIANTS if config["variants"][v]["n_layers"] >= 2],
    text="K-, Q- and V-composition of every later-layer head h with every earlier-layer head p: "
    "eigenvalue positivity of the composition term and the Frobenius composition score minus the "
    "random baseline of the same factor shapes.",
    tables=[
        {"path": aggregated_table("composition"), "appendix": True,
         "caption": "K-composition term positivity per seed (rows: seed and earlier head p; columns: later head h).",
         "where": {"kind": "K"},
         "pivot": {"index": ["seed", "src_layer", "src_head"], "columns": ["layer", "head"],
                   "values": "positivity_real", "label": "L{}H{}"}},
        {"path": aggregated_table("composition"), "appendix": True,
         "caption": "K-composition score minus baseline per seed.",
         "where": {"kind": "K"},
         "pivot": {"index": ["seed", "src_layer", "src_head"], "columns": ["layer", "head"],
                   "values": "score_minus_baseline", "label": "L{}H{}"}},
    ],
    figures=[{"path": f"{RESULTS}/figures/{{model}}/composition.png",
              "caption": "Composition grids of the first seed: term positivity (top) and score minus baseline (bottom)."}],
)
