"""The HTML and PDF report: a registry of sections rendered with jinja2 and WeasyPrint."""
