"""Render the report: a manifest of registered sections -> self-contained HTML -> PDF.

The manifest (JSON, written by the workflow from its section registry) lists for
every section its title, chapter, scope (``variant``: every variant side by side in its
chapter, :func:`body_chapters`, and per variant in the appendix; ``study``: once, after
the chapters), an optional template fragment, and per variant (or ``_study``) the tables
and figures it shows, with resolved paths.
"""
from __future__ import annotations

import base64
import datetime as _dt
import json
import platform
from importlib import metadata
from pathlib import Path

import jinja2
import pandas as pd
import yaml

from ..atomic import atomic_path, write_text
from ..claims.verdicts import WRITE_UP, WRITE_UP_TITLE
from ..core.seeding import first_seed
from . import tables as T
from ..formatting.plots import png_size

HERE = Path(__file__).parent
STUDY = "_study"


def figure_item(fig: dict, number: int) -> dict:
    """A figure spec ready to show: its number, the PNG as a data URI and its width in
    inches from the dpi stored in the PNG, so that it prints at the size it was drawn
    for (its fonts at their point sizes)."""
    shown(fig["path"], "a figure")
    width, _, dpi = png_size(fig["path"])
    return {**fig, "number": number, "uri": data_uri(fig["path"]),
            "width_in": round(width, 3) if dpi else None}


def shown(path, kind: str) -> None:
    """``path`` is the file the workflow wrote (:func:`~inductionlab.core.loading.check_file`);
    a missing one is :class:`~inductionlab.core.loading.BadInput` saying how to rebuild it."""
    from ..core.loading import BadInput, check_file

    if not Path(path).exists():
        raise BadInput(path, f"no such file ({kind} the report shows)",
                       hint="run `snakemake`, whose targets are every file the report shows: "
                       "it rebuilds the file and the report; `snakemake reports/report.html` "
                       "alone takes a report whose input was deleted for up to date")
    check_file(path, kind)


def data_uri(path) -> str:
    """A PNG file as a data: URI, so the HTML has no external references."""
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("inductionlab", "torch", "numpy", "pandas", "snakemake", "matplotlib",
                "jinja2", "weasyprint"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def training_environment(train_log_path) -> dict[str, str]:
    """Devices and torch versions the models were trained with (from the stacked train logs)."""
    if not train_log_path or not Path(train_log_path).is_file():
        return {}
    log = pd.read_csv(train_log_path)
    out = {}
    for column, label in (("device", "Training device"), ("torch", "Training torch")):
        if column in log:
            out[label] = ", ".join(sorted(log[column].dropna().astype(str).unique()))
    return out


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(render_table=T.render_table, mark_completion=T.mark_completion,
                       fmt=T.fmt, data_uri=data_uri, read_csv=pd.read_csv, select=T.select,
                       spread_table=T.spread_table, to_html=T.to_html, first_seed=first_seed)
    return env


class Numbers:
    """Running numbers of the report's figures and tables, in reading order."""

    def __init__(self):
        self.count = {"figure": 0, "table": 0}

    def next(self, kind: str) -> int:
        self.count[kind] += 1
        return self.count[kind]


def _render_items(items: dict, variant: str | None, numbers: Numbers, appendix: bool) -> dict:
    """The tables and figures of one section that belong in the body (``appendix`` False)
    or in the appendix, numbered."""
    tables = [t for t in items.get("tables", []) if _in_appendix(t, variant) == appendix]
    figures = [f for f in items.get("figures", []) if _in_appendix(f, variant) == appendix]
    rendered = [(spec, T.render_table(spec, spec.get("models", variant))) for spec in tables]
    return {  # a table with no rows for this model is left out, caption and number too
        "tables": [{**spec, "number": numbers.next("table"), "html": html}
                   for spec, html in rendered if html],
        "figures": [figure_item(fig, numbers.next("figure")) for fig in figures],
    }


def render_section(env, section: dict, key: str, numbers: Numbers | None = None,
                   appendix: bool = False) -> str:
    """One section's HTML for one variant (``key``) or for the study: its body part, or
    with ``appendix`` its appendix part ("" when it has none)."""
    variant = None if key == STUDY else key
    items = _render_items(section["items"].get(key, {}), variant, numbers or Numbers(), appendix)
    if appendix and not (items["tables"] or items["figures"]):
        return ""
    template = (env.from_string(Path(section["template"]).read_text()) if section.get("template")
                and not appendix else env.get_template("sections/generic.html.j2"))
    return template.render(section=section, variant=variant, appendix=appendix, **items)


def _in_appendix(spec: dict, variant: str) -> bool:
    """A table or figure spec's ``appendix``: True, or a list of the variants it applies to."""
    where = spec.get("appendix", False)
    return where is True or (isinstance(where, list) and variant in where)


def models_items(section: dict, models: list[str], numbers: Numbers) -> dict:
    """The body tables and figures of one section for several models side by side: each
    table once, with a row (or rows) per model; a figure drawn for every model at once (the
    same path for each) once; a figure per model once per model, its caption naming it.
    Every model of a section has the same list of specs (one registration, resolved per
    model); they are matched by position."""
    specs = {v: section["items"][v] for v in models if v in section["items"]}
    tables, figures = [], []
    n_tables = min((len(i.get("tables", [])) for i in specs.values()), default=0)
    n_figures = min((len(i.get("figures", [])) for i in specs.values()), default=0)
    for k in range(n_tables):
        mine = [v for v in specs if not _in_appendix(specs[v]["tables"][k], v)]
        html = T.render_table(specs[mine[0]]["tables"][k], mine) if mine else ""
        if html:
            tables.append({**specs[mine[0]]["tables"][k], "number": numbers.next("table"),
                           "html": html, "models": mine})
    for k in range(n_figures):
        per_model = [(v, specs[v]["figures"][k]) for v in specs
                     if not _in_appendix(specs[v]["figures"][k], v)]
        if len(per_model) > 1 and len({f["path"] for _, f in per_model}) == 1:  # of every model
            per_model = [(None, per_model[0][1])]
        figures += [{**figure_item(fig, numbers.next("figure")), "model": v} for v, fig in per_model]
    return {"tables": tables, "figures": figures}


def render_models_section(env, section: dict, models: list[str], items: dict) -> str:
    """One section's body HTML with ``models`` side by side (``items``: :func:`models_items`)."""
    template = (env.from_string(Path(section["template"]).read_text()) if section.get("template")
                else env.get_template("sections/generic.html.j2"))
    return template.render(section=section, variant=None, models=models, appendix=False, **items)


def body_chapters(env, manifest: dict, sections: list[dict], numbers: Numbers,
                  first: int) -> list[dict]:
    """The body: one chapter per analysis (a section's ``chapter``, else its own title), in
    the order of its first section, every model of the run side by side in it."""
    grouped: dict[str, list[dict]] = {}
    for s in sections:
        if s["scope"] == "variant":
            grouped.setdefault(s.get("chapter") or s["title"], []).append(s)
    chapters = []
    for title, members in grouped.items():
        number = first + len(chapters)
        parts = []
        for s in members:
            models = [v for v in manifest["variants"] if v in s["items"]]
            items = models_items(s, models, numbers)
            moved = not (items["tables"] or items["figures"]) and any(
                i.get("tables") or i.get("figures") for i in s["items"].values())
            if not moved:  # a section whose every table and figure is in the appendix: not here
                parts.append({"title": s["title"], "name": s["name"], "models": models,
                              "html": render_models_section(env, s, models, items)})
        for k, part in enumerate(parts):
            part["number"] = f"{number}.{k + 1}" if len(parts) > 1 else ""
        if parts:
            chapters.append({"title": title, "number": number, "sections": parts,
                             "name": members[0]["name"]})
    return chapters


def build_html(manifest: dict) -> str:
    from ..claims.verdicts import OUTCOME_WORDS
    from .front_page import copy_offsets, outcome_verb, tally_words
    from .story import highlight_paths, highlight_text, story, tally, worst_failure_modes

    env = _environment()
    numbers = Numbers()
    sections = sorted(manifest["sections"], key=lambda s: (s.get("order", 50), s["name"]))
    scorecard = (pd.read_csv(manifest["scorecard"], keep_default_na=False)
                 if manifest.get("scorecard") else None)
    if scorecard is not None:
        for column, default in (("group", ""), ("source", "write-up"), ("statement", ""),
                                ("range", ""), ("reason", ""), ("reference", ""), ("quote", "")):
            if column not in scorecard:
                scorecard[column] = default
    every_family = scorecard  # page 1 names every model's family
    if scorecard is not None and "family" in scorecard:  # other families: their own table
        scorecard = scorecard[scorecard["family"] == WRITE_UP].reset_index(drop=True)
    groups = dict(manifest.get("claim_groups", []))  # [[key, title], ...] in the file's order
    headline_number = numbers.next("table")
    families = family_table(manifest) if scorecard is not None else None
    failure = (worst_failure_modes(pd.read_csv(manifest["failure_modes"]), manifest["variants"])
               if manifest.get("failure_modes") and Path(manifest["failure_modes"]).is_file() else [])
    shown = [h for h in manifest.get("highlights", [])
             if all(Path(p).is_file() for p in highlight_paths(h))]
    # a page-1 finding is printed there only; the summary lists the others
    highlights = [highlight_text(h) for h in shown if not h.get("front")]
    front_highlights = [highlight_text(h) for h in shown if h.get("front")]
    inputs = summary_inputs(manifest)
    positions = position_readings(manifest, inputs)
    readings = content_readings(manifest, positions)
    algorithms = algorithm_summary(manifest, inputs)
    front = (front_page(manifest, scorecard, inputs, positions, every_family)
             if scorecard is not None else None)
    first = 2  # 1 summary, then the chapters (the scorecard is an appendix)
    chapters = body_chapters(env, manifest, sections, numbers, first)
    study = [{"title": s["title"], "name": s["name"], "number": first + len(chapters) + k,
              "html": render_section(env, s, STUDY, numbers)}
             for k, s in enumerate(s for s in sections if s["scope"] == "study")]
    appendix = []
    for v in manifest["variants"]:
        parts = [{"title": s["title"], "name": s["name"],
                  "html": render_section(env, s, v, numbers, appendix=True)}
                 for s in sections if s["scope"] == "variant" and v in s["items"]]
        parts = [p for p in parts if p["html"]]
        if parts:
            appendix.append({"variant": v, "letter": chr(ord("A") + len(appendix)), "sections": parts})
    study_parts = [{"title": s["title"], "name": s["name"],
                    "html": render_section(env, s, STUDY, numbers, appendix=True)}
                   for s in sections if s["scope"] == "study"]
    study_parts = [p for p in study_parts if p["html"]]
    last = [*(["algorithms"] if algorithms else []), "scorecard",
            *(["families"] if families else []), "methods", "configuration"]
    letters = {name: chr(ord("A") + len(appendix) + k) for k, name in enumerate(last)}
    return env.get_template("report.html.j2").render(
        manifest=manifest, chapters=chapters, study=study, scorecard=scorecard,
        appendix=appendix, study_appendix=study_parts, letters=letters,
        story=story(scorecard, manifest["variants"], groups) if scorecard is not None else [],
        tally=tally(scorecard) if scorecard is not None else {}, groups=groups,
        outcome_words=OUTCOME_WORDS, readings=readings, algorithms=algorithms, front=front,
        outcome_verb=outcome_verb, tally_words=tally_words,
        copy_offsets=copy_offsets(int(manifest["config"]["task"]["block_len"]),
                                  int(manifest["config"]["task"]["n_blocks"])),
        failure=failure, highlights=highlights, front_highlights=front_highlights,
        config_yaml=yaml.safe_dump(manifest["config"], sort_keys=False, width=100),
        versions=versions(), training=training_environment(manifest.get("train_log")),
        date=_dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        css=(HERE / "report.css").read_text(), headline_number=headline_number,
        families=families,
    )


def _csv(path) -> pd.DataFrame | None:
    return pd.read_csv(path) if path and Path(path).is_file() else None


def summary_inputs(manifest: dict) -> dict[str, pd.DataFrame | None]:
    """The run-wide readings the summary and page 1 show, each read once (None where the
    run has none): the content-or-position table and the algorithm readings."""
    return {"positions": _csv(manifest.get("content_or_position")),
            "algorithms": _csv(manifest.get("algorithms"))}


def position_readings(manifest: dict, inputs: dict) -> pd.DataFrame | None:
    """The content-or-position table, the write-up's variants first, then every other
    model; None without it."""
    if inputs["positions"] is None:
        return None
    return T.in_model_order(inputs["positions"], manifest["variants"])


def content_readings(manifest: dict, positions: pd.DataFrame | None) -> list[dict]:
    """Per model, the content-or-position reading in words."""
    from .content_or_position import sentence

    if positions is None:
        return []
    block_len = manifest["config"]["task"]["block_len"]
    return [{"variant": r["variant"], "text": sentence(r, block_len)} for _, r in positions.iterrows()]


def run_models(manifest: dict, inputs: dict, card: pd.DataFrame | None) -> list[str]:
    """Every model of the run: the config's variants, then every other model in the
    run-wide readings or the scorecard, in order of appearance."""
    seen = list(manifest["variants"])
    for frame in [inputs.get(k) for k in ("positions", "algorithms")] + [card]:
        if frame is not None and "variant" in frame:
            seen += [str(v) for v in frame["variant"].unique()]
    return list(dict.fromkeys(seen))


def front_page(manifest: dict, scorecard: pd.DataFrame, inputs: dict,
               positions: pd.DataFrame | None, every_family: pd.DataFrame | None = None) -> dict:
    """Page 1 (:mod:`.front_page`): per write-up model its tally and mechanism; every
    other model with its family, or with no claims; per family the verdicts that change
    on it, in words; the ones too close to call; caveats."""
    from ..stages.readings.readings import split_offsets
    from .front_page import (claims_in_words, copy_offsets, family_changes, mechanism,
                             model_tallies, other_models, split_unclaimed, task_words, too_close)

    task = manifest["config"]["task"]
    block_len = int(task["block_len"])
    readings = positions.set_index("variant") if positions is not None else None
    algorithms = (inputs["algorithms"].set_index("variant")
                  if inputs["algorithms"] is not None else None)
    tallies = model_tallies(scorecard, manifest["variants"])

    def reading_row(v: str):
        return readings.loc[v] if readings is not None and v in readings.index else None

    def reading_of(v: str) -> str:
        offsets = ({verb: split_offsets(algorithms.loc[v, verb]) for verb in ("copies", "suppresses")}
                   if algorithms is not None and v in algorithms.index else None)
        return mechanism(reading_row(v), offsets, block_len)

    models = [{"variant": v, "n": int((scorecard["variant"] == v).sum()), "tally": tallies[v],
               "task": task_words(reading_row(v), block_len), "mechanism": reading_of(v)}
              for v in manifest["variants"] if v in tallies]
    families = dict(manifest.get("families") or {})
    card = every_family if every_family is not None else scorecard
    others = [{**m, "task": task_words(reading_row(m["variant"]), block_len),
               "mechanism": reading_of(m["variant"])}
              for m in other_models(run_models(manifest, inputs, card), list(tallies), card,
                                    families)]
    others, unclaimed = split_unclaimed(others)
    comparison = _csv(manifest.get("family_comparison")) if families else None
    changes = family_changes(comparison, families, WRITE_UP_TITLE)
    for change in changes:
        change["groups"] = claims_in_words(change["changed"], scorecard, manifest["variants"])
    n_seeds = len(manifest["seeds"])
    copies = ", ".join(map(str, copy_offsets(block_len, int(task["n_blocks"]))))
    caveats = [
        f"One seed in the write-up, {n_seeds} here: each verdict counts seeds, each seed's "
        f"value with its 95 % interval.",
        f"Every copy of the letter to predict sits at a fixed position ({copies} back): an "
        f"attention score alone cannot tell looking for a copy from looking at a position; "
        f"the positional control (a head that looks for a copy keeps its score only where a "
        f"copy exists) and the period test can.",
        "Thresholds come from the write-up's wording, fixed before any result was seen, not "
        "tuned; an interval that contains its threshold is too close to call."]
    roles = dict(zip(scorecard["claim"].astype(str), scorecard["variant"].astype(str)))
    close = [{"role": roles.get(c, ""), "claim": c} for c in too_close(scorecard)]
    figure = manifest.get("period_test")
    return {"figure": data_uri(figure) if figure and Path(figure).is_file() else None,
            "models": models, "others": others, "unclaimed": unclaimed,
            "families": changes,
            "roles": [m["variant"] for m in models],
            "too_close": close,
            "too_close_groups": claims_in_words(close, scorecard, manifest["variants"]),
            "caveats": caveats}


def algorithm_summary(manifest: dict, inputs: dict) -> list[dict]:
    """Per model, the algorithm as measured and how much of it each program explains
    (:mod:`.algorithm_readings`); nothing when the run has no offsets tables."""
    from .algorithm_readings import algorithm_readings

    if inputs["algorithms"] is None:
        return []
    return algorithm_readings(inputs["algorithms"], manifest["variants"])


def family_table(manifest: dict) -> dict | None:
    """The table of every claim's outcome in each model family (an appendix), when the run
    has families besides the write-up's; the claims that change, counted and listed, are
    page 1's (``front["families"]``)."""
    titles = list((manifest.get("families") or {}).values())
    path = manifest.get("family_comparison")
    if not titles or not path or not Path(path).is_file():
        return None
    spec = {"path": path, "columns": ["role", "claim", WRITE_UP_TITLE, *titles]}
    return {"titles": titles, "every": T.render_table(spec)}


def write_report(manifest_path, html_path, pdf_path, log=print) -> None:
    """Render the manifest to HTML and PDF (both written atomically)."""
    from weasyprint import HTML

    manifest = json.loads(Path(manifest_path).read_text())
    html = build_html(manifest)
    write_text(html_path, html)
    log(f"wrote {html_path} ({len(html) / 1e6:.1f} MB)")
    with atomic_path(pdf_path, suffix=".pdf") as tmp:
        HTML(string=html, base_url=str(Path(html_path).parent)).write_pdf(tmp)
    log(f"wrote {pdf_path}")
