"""The formation study's answers in words, per retrained model, from the stacked
formation table (every seed of every model): each question answered with the evidence
beside it, and one sentence per model for page 1 and the summary.

The questions and how each is read (the thresholds are the project's, stated in
docs/methods.md; none is tuned here):

- ``previous_token_head``: does a layer-0 head have the previous-token role? (seeds with
  it, of all; the best score against its chance level);
- ``induction_head``: does a last-layer head look for the copy, i.e. have the induction
  role (score and content part past the head-role rule)? (seeds; its content part, and
  the same variant's on the write-up's task);
- ``k_composition``: is it built by K-composition (asked where some seed has an induction
  head)? Built by it when keys from the
  embedding alone leave at most half its excess over chance (``keys_ablation_left``
  <= 0.5); from the previous-token head when removing that one head does too
  (``ablation_left`` <= 0.5), else from several earlier heads at once;
- ``generalises``: does it solve the period test at every n? Yes when its lowest
  accuracy over n is at least 0.5 and at least half its highest (flat: content); a
  peaked test is position, a flat one near chance solves nothing;
- ``abrupt``: does the content part change in a phase change (seeds whose fit is one)?
- ``same_time``: do the loss and the content part change at the same time (midpoint gap
  at most ln of :data:`~inductionlab.stages.dynamics.phase_change.SAME_TIME_FACTOR`, as the
  dynamics read it, here on each seed's gap without its interval)?
Each answer counts seeds; "in k of n seeds" where they differ.
"""
from __future__ import annotations

import math

import pandas as pd

from ...stages.dynamics.phase_change import MAX_SPAN, SAME_TIME_FACTOR
from ...formatting.numbers import decimals, fmt_at

# each question's key, and its words (the ``metric`` of its row in formation_answers.csv)
QUESTIONS = {
    "previous_token_head": "a previous-token head in layer 0?",
    "induction_head": "an induction head in the last layer?",
    "k_composition": "built by K-composition?",
    "generalises": "solves every period?",
    "abrupt": "forms in a phase change?",
    "same_time": "at the same time as the loss?",
}
SENTENCE = "sentence"
HALF = 0.5  # a share of the excess left; the period test's lowest accuracy and flatness ratio
SAME_TIME = math.log(SAME_TIME_FACTOR)  # the midpoint gap |ln ratio| of "at the same time"


def _values(frame: pd.DataFrame, model: str, metric: str) -> pd.Series:
    rows = frame[(frame["variant"] == model) & (frame["metric"] == metric)]
    return rows.set_index("seed")["value"].astype(float)


def _range(values: pd.Series) -> str:
    """'mean' or 'mean (min–max)' over seeds, three significant digits."""
    values = values.dropna()
    if values.empty:
        return "–"
    mean = float(values.mean())
    places = decimals(mean)
    lo, hi = (fmt_at(float(v), places) for v in (values.min(), values.max()))
    text = fmt_at(mean, places)
    return text if lo == hi else f"{text} ({lo}–{hi})"


def _seeds(flags: pd.Series) -> tuple[str, int, int]:
    """('yes' | 'no' | 'in k of n seeds', k, n) of a 0/1 series over seeds."""
    flags = flags.dropna()
    k, n = int((flags > 0.5).sum()), len(flags)
    word = "yes" if n and k == n else "no" if k == 0 else f"in {k} of {n} seeds"
    return word, k, n


def model_answers(frame: pd.DataFrame, model: str, base: str, periods) -> dict[str, str]:
    """The answers of one retrained ``model`` (its ``base`` variant on the write-up's task
    beside it), question -> words with the evidence."""
    def v(metric, who=model):
        return _values(frame, who, metric)

    out, words = {}, {}
    word, k, n = _seeds(v("previous_token_head"))
    words["previous_token_head"] = word
    out["previous_token_head"] = (f"{word}: a layer-0 previous-token head in {k} of {n} seeds "
                                  f"(best score {_range(v('previous_token'))} against chance "
                                  f"{_range(v('previous_token_chance'))})")
    word, k, n = _seeds(v("induction_head"))
    formed = k  # seeds with an induction head
    words["induction_head"] = (f"{word} (content part {_range(v('induction_content'))}; {base} "
                               f"on the write-up's task {_range(v('induction_content', base))})")
    out["induction_head"] = (f"{word}: a last-layer head with the induction role in {k} of {n} "
                             f"seeds (content part {_range(v('induction_content'))}; {base} on "
                             f"the write-up's task {_range(v('induction_content', base))})")
    keys, one = v("keys_ablation_left").dropna(), v("ablation_left").dropna()
    if formed == 0:  # no seed has an induction head: there is nothing whose making to ask about
        words["k_composition"] = "– (no induction head)"
        out["k_composition"] = ("not asked: no seed has an induction head (excess over chance "
                                f"left with keys from the embedding alone {_range(keys)})")
    elif keys.empty:
        one_layer = frame.loc[(frame["variant"] == model) & (frame["metric"] == "keys_ablation_left"),
                              "note"].astype(str).str.contains("one layer").any()
        words["k_composition"] = "– (one layer)" if one_layer else "not measured"
        out["k_composition"] = "not measured: " + (
            "one layer, no later layer reads an earlier head" if one_layer
            else "no composition ablation")
    else:
        built = float(keys.mean()) <= HALF
        needs_one = not one.empty and float(one.mean()) <= HALF
        how = ("from the previous-token head" if needs_one
               else "from several layer-0 heads at once, no one of them needed")
        words["k_composition"] = (f"yes, {how} (left with keys from the embedding alone "
                                  f"{_range(keys)})" if built else f"no ({_range(keys)} left "
                                  "with keys from the embedding alone)")
        out["k_composition"] = (
            (f"yes, {how}" if built else "no: its keys from the embedding alone keep most of it")
            + f" (excess over chance left with keys from the embedding alone {_range(keys)}, "
            f"without the best previous-token head {_range(one)}; K-composition of that pair "
            f"{_range(v('k_composition'))} against {_range(v('k_composition_baseline'))} for "
            "random matrices)")
    accs = pd.concat([v(f"period{p}_acc").rename(p) for p in periods], axis=1)
    if accs.empty or accs.isna().all().all():
        words["generalises"] = out["generalises"] = "not measured"
    else:
        low, high = accs.min(axis=1), accs.max(axis=1)
        solves = (low >= HALF * high) & (low >= HALF)
        word, k, n = _seeds(solves.astype(float))
        words["generalises"] = f"{word} ({_range(low)} to {_range(high)} over n)"
        base_accs = pd.concat([v(f"period{p}_acc", base).rename(p) for p in periods], axis=1)
        out["generalises"] = (
            f"{word}: the period test is solved at every n = {periods[0]}–{periods[-1]} (lowest "
            f"accuracy at least {HALF:g} and {HALF:g} of the highest) in {k} of {n} seeds (accuracy {_range(low)} at its lowest, {_range(high)} at its highest; "
            f"{base}: {_range(base_accs.min(axis=1))} to {_range(base_accs.max(axis=1))})")
    word, k, n = _seeds(v("content_phase_change"))
    words["abrupt"] = (f"{word} (span a factor of {_range(v('content_span'))} in steps)" if formed
                       else f"– (no induction head; the fit to its best head: {word})")
    fit = (f"{word}: the content part changes in a phase change in {k} of {n} seeds (midpoint "
           f"{_range(v('content_midpoint'))} steps, 10–90 % span a factor of "
           f"{_range(v('content_span'))} in steps; a phase change needs at most {MAX_SPAN:g})")
    out["abrupt"] = fit if formed else f"not asked, no induction head; the fit to its best head: {fit}"
    gap = v("midpoint_gap").dropna()
    if gap.empty:
        words["same_time"] = "not measured"
        out["same_time"] = "not measured: no change of the content part to time"
    else:
        word, k, n = _seeds((gap <= SAME_TIME).astype(float))
        words["same_time"] = (f"{word} (midpoint gap {_range(gap)}, same time at most "
                              f"{fmt_at(SAME_TIME, 3)})")
        out["same_time"] = (f"{word}: loss and content part change at the same time in {k} of "
                            f"{n} seeds (gap |ln ratio| of the midpoints {_range(gap)}; at most "
                            f"ln {SAME_TIME_FACTOR:g} = {fmt_at(SAME_TIME, 3)} is the same time; "
                            f"loss midpoint "
                            f"{_range(v('loss_midpoint'))} steps)")
    out[SENTENCE] = (
        f"{model}: a layer-0 previous-token head {words['previous_token_head']}; a last-layer "
        f"induction head {words['induction_head']}; built by K-composition "
        f"{words['k_composition']}; solves every period {words['generalises']}; forms in a "
        f"phase change {words['abrupt']}; at the same time as the loss {words['same_time']}")
    return out


def formation_answers(frame: pd.DataFrame, retrained: dict[str, str], periods) -> pd.DataFrame:
    """Columns variant (the retrained model), base, metric (a question of
    :data:`QUESTIONS` in words, or :data:`SENTENCE`: the answers in one sentence), text."""
    rows = []
    for base, model in retrained.items():
        if model not in set(frame["variant"]):
            continue
        answers = model_answers(frame, model, base, list(periods))
        rows += [{"variant": model, "base": base, "metric": QUESTIONS.get(q, q), "text": answers[q]}
                 for q in (*QUESTIONS, SENTENCE)]
    return pd.DataFrame(rows, columns=["variant", "base", "metric", "text"])
