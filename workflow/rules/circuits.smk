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
        "logs/circuits/{variant}/seed{seed}.log",
    shell:
        "inductionlab circuits-tables {input} {output.circuits} {output.composition} "
        "{output.eigenvalues} > {log} 2>&1"
