"""Render the report: a manifest of registered sections -> self-contained HTML -> PDF.

The manifest (JSON, written by the workflow from its section registry) lists for
every section its title, scope (``variant``: repeated in each variant's chapter;
``study``: once, after the chapters), an optional template fragment, and per
variant (or ``_study``) the tables and figures it shows, with resolved paths.
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
from . import tables as T

HERE = Path(__file__).parent
STUDY = "_study"


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
                       spread_table=T.spread_table, to_html=T.to_html)
    return env


def _render_items(items: dict, variant: str | None) -> dict:
    return {
        "tables": [{**spec, "html": T.render_table(spec, variant)} for spec in items.get("tables", [])],
        "figures": [{**fig, "uri": data_uri(fig["path"])} for fig in items.get("figures", [])],
    }


def render_section(env, section: dict, key: str) -> str:
    """One section's HTML for one variant (``key``) or for the study."""
    variant = None if key == STUDY else key
    items = _render_items(section["items"].get(key, {}), variant)
    template = (env.from_string(Path(section["template"]).read_text()) if section.get("template")
                else env.get_template("sections/generic.html.j2"))
    return template.render(section=section, variant=variant, **items)


def build_html(manifest: dict) -> str:
    env = _environment()
    sections = sorted(manifest["sections"], key=lambda s: (s.get("order", 50), s["name"]))
    chapters = [{"variant": v, "sections": [
        {"title": s["title"], "name": s["name"], "html": render_section(env, s, v)}
        for s in sections if s["scope"] == "variant" and v in s["items"]]}
        for v in manifest["variants"]]
    study = [{"title": s["title"], "name": s["name"], "html": render_section(env, s, STUDY)}
             for s in sections if s["scope"] == "study"]
    scorecard = (pd.read_csv(manifest["scorecard"], keep_default_na=False)
                 if manifest.get("scorecard") else None)
    return env.get_template("report.html.j2").render(
        manifest=manifest, chapters=chapters, study=study, scorecard=scorecard,
        config_yaml=yaml.safe_dump(manifest["config"], sort_keys=False, width=100),
        versions=versions(), training=training_environment(manifest.get("train_log")), date=_dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        css=(HERE / "report.css").read_text(),
    )


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
