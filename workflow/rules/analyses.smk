# One job a model and seed for every analysis that reads only that model (registered by the
# stages with model_analysis, common.smk): one process, each analysis after those whose
# files it reads. A changed setting reruns this job for every model that reads it; what
# reads the stacked tables of every model (offsets, the studies' tables) stays a job of its
# own, so a setting read only there (a role threshold) leaves this job alone.


def ordered_analyses():
    """The registered analyses' names, each after every one whose outputs it reads."""
    left, order, made = dict(MODEL_ANALYSES), [], set()
    outputs = {p for a in left.values() for p in a["output"].values()}
    while left:
        ready = [n for n, a in left.items()
                 if not ({*a["input"].values(), *a["extra"]} & outputs) - made]
        if not ready:
            sys.exit(f"inductionlab: the model analyses {sorted(left)} read each other's files "
                     "in a circle")
        for name in ready:
            order.append(name)
            made |= set(left.pop(name)["output"].values())
    return order


ANALYSIS_ORDER = ordered_analyses()
ANALYSIS_OUTPUTS = [p for n in ANALYSIS_ORDER for p in MODEL_ANALYSES[n]["output"].values()]


def analysis_command(name, wildcards):
    """The command line (without ``inductionlab``) of analysis ``name`` for one model and seed."""
    a = MODEL_ANALYSES[name]
    words = [a["command"]]
    for key, pattern in {**a["input"], **a["options"], **a["output"]}.items():
        words += [f"--{key.replace('_', '-')}",
                  str(pattern).format(model=wildcards.model, seed=wildcards.seed)]
    return shlex.join(words)


def analysis_commands(wildcards):
    return " ".join(shlex.quote(analysis_command(n, wildcards)) for n in ANALYSIS_ORDER)


rule analyse:
    input:
        sorted({str(p) for a in MODEL_ANALYSES.values()
                for p in [*a["input"].values(), *a["extra"]]} - set(ANALYSIS_OUTPUTS)),
        # a model clamped to a trained reference runs under its clamp: the reference's
        # model.pt (same seed), which its model.pt names
        reference=reference_model_file,
    output:
        ANALYSIS_OUTPUTS,
    params:
        commands=analysis_commands,
    log:
        "logs/analyse/{model}/seed{seed}.log",
    benchmark:
        "results/benchmarks/analyse/{model}/seed{seed}.tsv"
    threads: 1
    resources:
        mem_mb=max(a["mem_mb"] for a in MODEL_ANALYSES.values()),
        runtime=sum(a["runtime"] for a in MODEL_ANALYSES.values()),
    shell:
        "inductionlab together --commands {params.commands} --threads {threads} > {log} 2>&1"
