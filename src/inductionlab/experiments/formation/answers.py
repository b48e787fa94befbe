"""The formation study's answers: every question a verdict per seed, counted over the seeds
where its premise holds, in words no stronger than that count.

Per retrained model and seed (:func:`seed_verdicts`, the rows of formation_verdicts.csv),
each question is decided like a claim (:func:`~inductionlab.claims.metrics.decide` on the
value's 95 % interval: holds, fails, too close to call when the interval contains the
threshold) or read from a verdict a stage already decided, or is "not measured" with the
reason when its premise does not hold in that seed:

- ``previous_token_head`` / ``induction_head``: a layer-0 head with the previous-token role
  / a last-layer head with the induction role (the head-role rule, applied once where head
  scores are stacked); no premise. The induction head named is the role holder with the
  largest content part; a previous-token head is named only when it has the role;
- ``k_composition``: premise, an induction head in that seed. Its keys need layer 0 when the
  share of its content part left with keys from the embedding alone is at most
  :data:`HALF` over its whole interval;
- ``needs L0H<h>``, one per layer-0 head: premise as above. Head h is needed when the share
  left without it in the keys is at most :data:`HALF` over its whole interval, not needed
  when the whole interval is above, too close to call otherwise. "No single head needed"
  only where every head is not needed;
- ``trained_periods`` / ``untrained_periods``: the period test on the periods the model's
  own task draws, and on the others it was tested on; solved when every length's accuracy
  is at least :data:`SOLVES` (the project's one threshold for the word) over its whole
  interval. Only the untrained periods can show a rule beyond the trained ones: the task's
  own Bayes predictor, a mixture of the trained periods, is flat over those too;
- ``loss_shape``: the loss on predictable targets changes in a phase change (the
  dynamics' verdict on the span's interval); no premise;
- ``abrupt`` and ``same_time``: premise, an induction head in that seed; the head's content
  part changes in a phase change, and at the same time as the loss (the interval of
  |ln midpoint ratio| against ln 2), as the stacked, decided phase_change table says.

:func:`formation_answers` counts them ("holds in k of n seeds", then "not measured in m:
why") and writes one sentence per model for page 1.
"""
from __future__ import annotations

import math
import re

import pandas as pd

from ...analysis.uncertainty import FAILS, HOLDS, NOT_MEASURED, TOO_CLOSE, mean_interval
from ...claims.metrics import Estimate, decide
from ...claims.verdicts import combine
from ...claims.words import SOLVES, verdict_text
from ...formatting.numbers import format_value, number, ranges_phrase
from ...stages.dynamics.dynamics import COINCIDENCE, INDUCTION_FIT, LOSS_FIT
from .analysis import PERIOD_TEST, keys_left_metric

HALF = 0.5  # a share of the content part left: at most this, the head removed is needed

# each question's key and its words (the ``metric`` of its row in formation_answers.csv)
QUESTIONS = {
    "induction_head": "an induction head in the last layer?",
    "previous_token_head": "a previous-token head in layer 0?",
    "k_composition": "do its keys need layer 0 (K-composition)?",
    "needed_heads": "which layer-0 heads does it need?",
    "trained_periods": "solves the periods it trained on?",
    "untrained_periods": "solves periods it never saw?",
    "loss_shape": "does the loss fall in a phase change?",
    "abrupt": "does the head form in a phase change?",
    "same_time": "at the same time as the loss?",
}
SENTENCE = "sentence"
NEEDS = re.compile(r"^needs (L0H\d+)$")
PERIOD_ACC = re.compile(r"^period(\d+)_acc$")
VERDICT_COLUMNS = ["variant", "seed", "question", "status", "value", "low", "high", "note"]
NO_HEAD = "no induction head in this seed"


def _verdict(question: str, status: str, value=math.nan, low=math.nan, high=math.nan,
             note: str = "") -> dict:
    return {"question": question, "status": status, "value": float(value), "low": float(low),
            "high": float(high), "note": note}


class _Seed:
    """One model's rows of the stacked formation table in one seed, by metric."""

    def __init__(self, rows: pd.DataFrame):
        self.by = rows.set_index("metric")

    def has(self, metric: str) -> bool:
        return metric in self.by.index and pd.notna(self.by.loc[metric, "value"])

    def estimate(self, metric: str) -> Estimate:
        r = self.by.loc[metric]
        return Estimate(float(r["value"]), float(r.get("low", math.nan)), float(r.get("high", math.nan)))

    def note(self, metric: str) -> str:
        if metric not in self.by.index:
            return ""
        note = self.by.loc[metric, "note"]
        return note if isinstance(note, str) else ""

    def flag(self, metric: str) -> bool:
        return self.has(metric) and float(self.by.loc[metric, "value"]) > 0.5

    def periods(self) -> dict[int, bool]:
        """Tested period -> whether the model's task trains it."""
        out = {}
        for metric in self.by.index:
            m = PERIOD_ACC.match(str(metric))
            if m and self.has(metric):
                out[int(m.group(1))] = self.flag(f"period{m.group(1)}_trained")
        return dict(sorted(out.items()))


def _period_verdict(seed: _Seed, question: str, lengths: list[int]) -> dict:
    """Solved when every length's accuracy is at least SOLVES over its whole interval; the
    value is the lowest accuracy, the note its length and the task predictor's accuracy."""
    if not lengths:
        return _verdict(question, NOT_MEASURED,
                        note=seed.note(PERIOD_TEST) or "no such period tested")
    accs = {n: seed.estimate(f"period{n}_acc") for n in lengths}
    n = min(accs, key=lambda k: accs[k].value)
    low = accs[n]
    predictor = f"period{n}_task_acc"
    note = f"n = {n}" + (f"; task predictor {format_value(seed.estimate(predictor).value)}"
                         if seed.has(predictor) else "")
    status = combine([decide(">=", SOLVES, a) for a in accs.values()])
    return _verdict(question, status, low.value, low.low, low.high, note)


def _phase_verdict(phase: pd.DataFrame, metric: str, question: str) -> dict:
    rows = phase[phase["metric"] == metric]
    if rows.empty or "verdict" not in rows:
        return _verdict(question, NOT_MEASURED, note="no fit in the phase_change table")
    r = rows.iloc[0]
    status = str(r["verdict"]) if isinstance(r["verdict"], str) else NOT_MEASURED
    value, low, high = ((r["span"], r["span_low"], r["span_high"]) if metric != COINCIDENCE
                        else (r["value"], r["low"], r["high"]))
    note = r["note"] if isinstance(r["note"], str) else ""
    return _verdict(question, status, value, low, high, note)


def seed_verdicts(rows: pd.DataFrame, phase: pd.DataFrame) -> list[dict]:
    """Every question's verdict in one seed of one model: ``rows``, its rows of the stacked
    formation table; ``phase``, its rows of the stacked, decided phase_change table."""
    seed = _Seed(rows)
    out = []
    prev = seed.estimate("previous_token")
    out.append(_verdict("previous_token_head", HOLDS if seed.flag("previous_token_head") else FAILS,
                        prev.value, prev.low, prev.high,
                        f"{seed.note('previous_token')}; chance "
                        f"{format_value(seed.estimate('previous_token_chance').value)}"))
    formed = seed.flag("induction_head")
    content = seed.estimate("induction_content")
    out.append(_verdict("induction_head", HOLDS if formed else FAILS, content.value, content.low,
                        content.high, seed.note("induction_content")))
    heads = sorted(int(m.group(1)) for m in (re.match(r"^keys_left_L0H(\d+)$", str(k))
                                              for k in seed.by.index) if m)
    questions = [("k_composition", "keys_ablation_left")] + [
        (f"needs L0H{h}", keys_left_metric(h)) for h in heads]
    for question, metric in questions:
        if not formed:
            out.append(_verdict(question, NOT_MEASURED, note=NO_HEAD))
        elif not seed.has(metric):
            out.append(_verdict(question, NOT_MEASURED, note=seed.note(metric) or "not measured"))
        else:
            e = seed.estimate(metric)
            out.append(_verdict(question, decide("<=", HALF, e), e.value, e.low, e.high,
                                seed.note(metric)))
    periods = seed.periods()
    out.append(_period_verdict(seed, "trained_periods", [n for n, t in periods.items() if t]))
    out.append(_period_verdict(seed, "untrained_periods", [n for n, t in periods.items() if not t]))
    out.append(_phase_verdict(phase, LOSS_FIT, "loss_shape"))
    for metric, question in ((INDUCTION_FIT, "abrupt"), (COINCIDENCE, "same_time")):
        out.append(_phase_verdict(phase, metric, question) if formed
                   else _verdict(question, NOT_MEASURED, note=NO_HEAD))
    return out


def verdict_table(frame: pd.DataFrame, phase: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """formation_verdicts.csv: :data:`VERDICT_COLUMNS`, one row per model, seed and question."""
    rows = []
    for model in models:
        mine = frame[frame["variant"] == model]
        for s, seed_rows in mine.groupby("seed", sort=True):
            fits = phase[(phase["variant"] == model) & (phase["seed"] == s)]
            rows += [{"variant": model, "seed": int(s), **v} for v in seed_verdicts(seed_rows, fits)]
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


# ------------------------------------------------------------------ counted, in words

def counted(rows: pd.DataFrame, verb: str = "") -> str:
    """"in 1 of 1 seeds; not measured in 4 of 5 seeds: no induction head in this seed": the
    verdicts of the seeds where the premise holds counted as the claims count them (the
    holding seeds after ``verb``), then the others with why."""
    statuses = list(rows["status"])
    measured = [s for s in statuses if s != NOT_MEASURED]
    missing = rows[rows["status"] == NOT_MEASURED]
    why = "; ".join(dict.fromkeys(str(n) for n in missing["note"] if str(n)))
    if not measured:
        return f"not measured: {why}" if why else "not measured"
    text = verdict_text(measured).removeprefix(HOLDS + " ")
    text = f"{verb} {text}" if verb else text
    if len(missing):
        text += f"; not measured in {len(missing)} of {len(statuses)} seeds" + (f": {why}" if why else "")
    return text


def _num(value: float) -> str:
    """A share, accuracy or span as the answers print it: two decimals, three digits from 10 on."""
    return number(value, ".3g" if abs(value) >= 10 else ".2f")


def _over_seeds(rows: pd.DataFrame) -> str:
    """The values of the measured seeds: "0.37" for one seed, "0.35 [0.21, 0.49] over 2 seeds"."""
    values = rows.loc[rows["status"] != NOT_MEASURED, "value"].dropna().astype(float)
    if values.empty:
        return ""
    if len(values) == 1:
        r = rows.loc[values.index[0]]
        bounds = (f" [{_num(r['low'])}, {_num(r['high'])}]"
                  if pd.notna(r["low"]) else "")
        return f"{_num(values.iloc[0])}{bounds}"
    mean, low, high = mean_interval(values.to_numpy())
    return (f"{_num(mean)} [{_num(low)}, {_num(high)}] "
            f"over {len(values)} seeds")


def _heads_named(rows: pd.DataFrame) -> str:
    names = sorted({str(n).split(";")[0].split(":")[-1].strip() for n in rows["note"] if str(n)})
    return ", ".join(n for n in names if n)


def model_answers(verdicts: pd.DataFrame, model: str, task_words: str = "") -> dict[str, str]:
    """One model's answers, question -> words, from its rows of :func:`verdict_table`."""
    mine = verdicts[verdicts["variant"] == model]

    def q(name):
        return mine[mine["question"] == name]

    out = {}
    ind = q("induction_head")
    out["induction_head"] = (f"{counted(ind)} (the head with the role and the largest content "
                             f"part: {_heads_named(ind[ind['status'] == HOLDS]) or 'none'}; "
                             f"content part {_over_seeds(ind)})")
    prev = q("previous_token_head")
    held = prev[prev["status"] == HOLDS]
    out["previous_token_head"] = (
        f"{counted(prev)} ({'the previous-token head: ' + _heads_named(held) + '; ' if len(held) else ''}"
        f"best layer-0 score {_over_seeds(prev.assign(status=HOLDS))}, chance "
        f"{str(prev['note'].iloc[0]).split('chance ')[-1] if len(prev) else '–'})")
    keys = q("k_composition")
    out["k_composition"] = (f"{counted(keys)} (share of the content part left with keys from the "
                            f"embedding alone {_over_seeds(keys) or '–'}; needs layer 0 at most "
                            f"{HALF:g})")
    out["needed_heads"] = needed_words(mine)
    for question, what in (("trained_periods", "trained"), ("untrained_periods", "untrained")):
        rows = q(question)
        out[question] = (f"{counted(rows)} (accuracy ≥ {SOLVES:g} at every {what} "
                         f"length; lowest {_over_seeds(rows) or '–'}"
                         + (f", {rows['note'].iloc[0]}" if len(rows) and rows['note'].iloc[0] else "")
                         + ")")
    for question in ("loss_shape", "abrupt", "same_time"):
        rows = q(question)
        what = "gap |ln ratio| of the midpoints" if question == "same_time" else "10–90 % span"
        over = _over_seeds(rows)
        out[question] = counted(rows) + (f" ({what} {over})" if over else "")
    out[SENTENCE] = sentence(model, task_words, mine, out)
    return out


def needed_words(mine: pd.DataFrame) -> str:
    """Which layer-0 heads the induction head needs: per head the seeds where it is needed,
    and "no single head needed" counted only over seeds where every head is not needed."""
    rows = mine[mine["question"].astype(str).str.match(NEEDS.pattern)]
    if rows.empty or (rows["status"] == NOT_MEASURED).all():
        reasons = "; ".join(dict.fromkeys(n for n in rows["note"] if isinstance(n, str) and n))
        return "not measured" + (f": {reasons}" if reasons else ": no layer-0 head in a later layer's keys")
    parts = []
    for question, head_rows in rows.groupby("question", sort=True):
        statuses = list(head_rows["status"])
        measured = [s for s in statuses if s != NOT_MEASURED]
        if HOLDS in measured or TOO_CLOSE in measured:
            extra = f", {measured.count(TOO_CLOSE)} too close to call" if TOO_CLOSE in measured else ""
            parts.append(f"{NEEDS.match(question).group(1)} in {measured.count(HOLDS)} of "
                         f"{len(measured)} seeds{extra}")
    by_seed = rows[rows["status"] != NOT_MEASURED].groupby("seed")["status"]
    none_needed = sum(all(s == FAILS for s in statuses) for _, statuses in by_seed)
    n = by_seed.ngroups
    text = ("needs " + ", ".join(parts)) if parts else ""
    if none_needed:
        text += (" and " if text else "") + f"no single head needed in {none_needed} of {n} seeds"
    return text or "no head needed"


def _measured(rows: pd.DataFrame) -> str:
    """The verdicts of the seeds where the premise holds, counted: "in 2 of 4 (2 too close
    to call)"."""
    measured = [st for st in rows["status"] if st != NOT_MEASURED]
    if not measured:  # no seed to count: say why
        why = next((str(n) for n in rows["note"] if isinstance(n, str) and n), "")
        return f"not measured ({why})" if why else "not measured"
    return verdict_text(measured).removeprefix(HOLDS + " ").replace(" seeds", "", 1)


def sentence(model: str, task_words: str, mine: pd.DataFrame, out: dict[str, str]) -> str:
    """Page 1's sentence: every verdict counted over the seeds of its premise, with the
    value it was read from; the full answers are the study's table."""
    def q(name):
        return mine[mine["question"] == name]

    seeds = mine["seed"].nunique()
    ind, prev = q("induction_head"), q("previous_token_head")
    formed = int((ind["status"] == HOLDS).sum())
    head = f"{model} ({task_words + '; ' if task_words else ''}{seeds} seed{'s' if seeds != 1 else ''})"
    named = _heads_named(ind[ind["status"] == HOLDS])
    parts = [f"an induction head in {formed} of {seeds} seeds"
             + (f" ({named}, content part {_over_seeds(ind)})" if formed else
                f" (best content part {_over_seeds(ind)})")]
    held = prev[prev["status"] == HOLDS]
    chance = str(prev["note"].iloc[0]).split("chance ")[-1] if len(prev) else "–"
    parts.append(f"a previous-token head in {len(held)} of {seeds} seeds"
                 + (f" ({_heads_named(held)})" if len(held) else
                    f" (best layer-0 score {_over_seeds(prev.assign(status=HOLDS))}, chance {chance})"))
    if formed:
        keys = q("k_composition")
        keys = (f"its keys need layer 0 {_measured(keys)}, {out['needed_heads']}"
                if (keys["status"] != NOT_MEASURED).any() else
                f"whether its keys need layer 0 is {_measured(keys)}")
        parts.append(f"in the {formed} seed{'s' if formed != 1 else ''} with the head, {keys}, "
                     f"it forms in a phase change {_measured(q('abrupt'))} and at the same time "
                     f"as the loss {_measured(q('same_time'))}")
    else:
        parts.append("with no induction head, how and when one forms is not measured")
    untrained = q("untrained_periods")
    parts.append(f"it solves its trained periods {_measured(q('trained_periods'))} and the "
                 f"untrained ones {_measured(untrained)}"
                 + (f" (lowest accuracy {_over_seeds(untrained)}, "
                    f"{untrained['note'].iloc[0]})" if len(untrained) and
                    untrained["status"].iloc[0] != NOT_MEASURED else ""))
    return f"{head}: " + "; ".join(parts) + "."


def trained_words(frame: pd.DataFrame, model: str, task: str) -> str:
    """"trained on variable_period, periods 3–8": the task and the periods the stacked
    formation table marks as trained for ``model``."""
    rows = frame[(frame["variant"] == model) & frame["metric"].astype(str).str.match(r"^period\d+_trained$")]
    trained = sorted({int(str(m)[6:].split("_")[0]) for m, v in zip(rows["metric"], rows["value"]) if v == 1})
    periods = f", period{'s' if len(trained) > 1 else ''} {ranges_phrase(trained)}" if trained else ""
    return f"trained on {task}{periods}"


def formation_answers(frame: pd.DataFrame, phase: pd.DataFrame, retrained: dict[str, str],
                      task: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(formation_verdicts.csv, formation_answers.csv) of the retrained models
    (``retrained``: base variant -> model, each trained on ``task``) from the stacked
    formation table ``frame`` and the stacked, decided phase_change table ``phase``. The
    answers' columns: variant (the retrained model), base, metric (a question of
    :data:`QUESTIONS` in words, or :data:`SENTENCE`), text."""
    models = [m for m in retrained.values() if m in set(frame["variant"])]
    verdicts = verdict_table(frame, phase, models)
    rows = []
    for base, model in retrained.items():
        if model not in models:
            continue
        answers = model_answers(verdicts, model, trained_words(frame, model, task))
        rows += [{"variant": model, "base": base, "metric": QUESTIONS.get(q, q), "text": answers[q]}
                 for q in (*QUESTIONS, SENTENCE)]
    return verdicts, pd.DataFrame(rows, columns=["variant", "base", "metric", "text"])
