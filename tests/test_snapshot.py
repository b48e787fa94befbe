"""The snapshot comparison finds a moved value and ignores what differs between equal runs."""
import pandas as pd

from snapshot import differences, report_text, table_digest


def test_a_moved_value_is_found_and_a_wall_clock_time_is_not(tmp_path):
    path = tmp_path / "t.csv"
    frame = pd.DataFrame({"metric": ["loss", "elapsed_s"], "value": [0.5, 1.25], "seconds": [3, 4]})
    frame.to_csv(path, index=False)
    before = table_digest(path)
    frame.assign(seconds=[9, 9]).to_csv(path, index=False)  # a timing column
    assert table_digest(path) == before
    frame.assign(value=[0.5, 7.0]).to_csv(path, index=False)  # a timing row of a long table
    assert table_digest(path) == before
    frame.assign(value=[0.5000001, 1.25]).to_csv(path, index=False)
    assert table_digest(path) != before
    then = {"tables": {"t.csv": before}, "report_text": ["a"]}
    assert differences({"tables": {"t.csv": table_digest(path)}, "report_text": ["a"]}, then) == [
        "t.csv: values differ"]
    assert differences({"tables": {}, "report_text": ["b"]}, then)[0] == "t.csv: gone"


def test_the_report_text_leaves_out_dates_and_timing_columns(tmp_path):
    page = tmp_path / "r.html"
    page.write_text("<p>run 2026-12-04 21:40:01 in /tmp/x/y</p><table><tr><th>model</th>"
                    "<th>training time (s)</th></tr><tr><td>a</td><td>3.2</td></tr></table>"
                    "<p>loss 0.25</p>")
    assert report_text(page) == ["run <time> in <path>", "model |", "a |", "loss 0.25"]
