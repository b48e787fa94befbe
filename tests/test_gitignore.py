"""Every file the workflow writes in the working folder is ignored by git: the results, the
logs, Snakemake's own folder, the report and, beside each written file, the record of its
SHA-256 and size (``.<name>.sha256``) and a killed job's temporary files (``.tmp-*``)."""
import shutil
import subprocess

import pytest

from helpers import ROOT

WRITTEN = ["results/one_layer/seed0/model.pt", "logs/train/one_layer/seed0.log",
           ".snakemake/log/x.snakemake.log", "reports/report.html", "reports/report.pdf",
           "reports/.report.html.sha256", "reports/.report.pdf.sha256",
           "reports/.tmp-report.html.abc123.html", "reports/.tmp-report.pdf.x1"]
KEPT = ["reports/.gitkeep", "config.yaml", "Snakefile", "src/inductionlab/config.py"]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs git and a git checkout")
def test_generated_files_are_ignored_and_the_sources_are_not():
    def ignored(paths):
        proc = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT,
                              input="\n".join(paths) + "\n", capture_output=True, text=True)
        return set(proc.stdout.split())
    assert sorted(set(WRITTEN) - ignored(WRITTEN)) == []
    assert sorted(ignored(KEPT)) == []
