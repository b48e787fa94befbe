# A minimal extra stage for the end-to-end test, included through the `extra_rules`
# config key: one study-level table and one figure, registered as a report section.
# It checks that a stage added outside workflow/rules reaches the HTML and PDF report.

EXTRA_ANSWER = 0.4375  # shown by the report as "0.4375"


rule extra_answer:
    output:
        table=f"{RESULTS}/extra/answer.csv",
        figure=f"{RESULTS}/extra/answer.png",
    log:
        "logs/extra_answer.log",
    run:
        import pandas as pd
        from matplotlib.figure import Figure

        from inductionlab.atomic import write_csv
        from inductionlab.formatting.plots import save

        write_csv(output.table, pd.DataFrame({"check": ["extra-stage-answer"], "value": [EXTRA_ANSWER]}))
        fig = Figure(figsize=(2, 1.5))
        fig.add_subplot().plot([0, 1, 2], [0, 1, 4])
        save(fig, output.figure)
        with open(log[0], "w") as fh:
            fh.write(f"wrote {output.table} and {output.figure}\n")


report_section(
    name="extra_check",
    title="Extra stage check",
    scope="study",
    order=90,
    text="A stage included through the extra_rules config key.",
    tables=[{"path": f"{RESULTS}/extra/answer.csv", "caption": "The extra stage's answer."}],
    figures=[{"path": f"{RESULTS}/extra/answer.png", "caption": "The extra stage's figure."}],
)
