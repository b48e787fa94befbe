"""Without a config.yaml in the working folder, `inductionlab check-config` and `snakemake`
say so, naming the folder and how to point at a config, instead of "'variants' is a
required property"."""
import subprocess

import pytest

from helpers import snakemake_command
from inductionlab.cli import main


@pytest.mark.slow
@pytest.mark.parametrize("overlay", [None, "seeds: [0]\n"])
def test_no_config_yaml_is_named_by_both(tmp_path, monkeypatch, capsys, overlay):
    monkeypatch.chdir(tmp_path)
    args = []
    if overlay:
        (tmp_path / "overlay.yaml").write_text(overlay)
        args = ["overlay.yaml"]
    capsys.readouterr()
    assert main(["check-config", *args]) == 1
    err = capsys.readouterr().err
    words = f"config.yaml was not found in {tmp_path.resolve()}"
    assert words in err and "or give a full config as FILE" in err and "'variants'" not in err, err
    proc = subprocess.run(snakemake_command(tmp_path, "-n", *(["--configfile", *args] if args else [])),
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert words in proc.stderr and "--configfile FILE" in proc.stderr and "'variants'" not in proc.stderr
    if overlay:
        assert "holds no variants (an overlay goes over config.yaml)" in err
