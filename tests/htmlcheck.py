"""Checks on rendered reports shared by the report tests."""
import re
import unicodedata


def squash(text: str) -> str:
    """Text without any whitespace, compatibility characters folded (ligatures).

    PDF text extraction may break a heading across lines or drop the spaces between
    words, so the report's text and the expected strings are compared squashed.
    """
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def external_references(html: str) -> list[str]:
    """Everything in ``html`` that would load something from outside the file."""
    found = [s for s in ("http://", "https://", "<link", "url(", "@import") if s in html]
    found += [m.group(0)[:60] for m in re.finditer(r"""\ssrc\s*=\s*(?!["']?data:image/png;base64,)""", html)]
    found += [m.group(0) for m in re.finditer(r"""\shref\s*=\s*(?!["']?#)[^\s>]*""", html)]
    return found
