"""The report's one number format, for its tables and its claims alike.

A number is shown to :data:`SIGNIFICANT` (3) significant digits (:func:`decimals`:
"0.500", "−1.00" for −0.9996, "2.61", "1235"), trailing zeros kept; an integer as it is
(:func:`fmt`). The numbers that go with a value (its interval; the std, min and max over
seeds) are shown at the value's decimals, or at their own 3 significant digits where those
are fewer (:func:`companion_places`). A claim's value gets more digits only where 3 would
read the other way against its threshold, and a whole value (a count) is printed whole
(:func:`format_value`, :func:`bound_text`). Every minus sign is the true minus U+2212; NaN
is an en dash, infinity ∞.
"""
from __future__ import annotations

import html
import math
import operator
import re

from .labels import minus_signs

COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
               "==": operator.eq}
SIGNIFICANT = 3


def decimals(value: float, significant: int = SIGNIFICANT) -> int:
    """Digits after the point that show ``value`` to ``significant`` significant digits,
    counted on the rounded number (−0.9996 is "−1.00", 0.0009996 is "0.00100")."""
    if value == 0 or not math.isfinite(value):
        return 0
    exponent = math.floor(math.log10(abs(value)))
    if round(abs(value), significant - 1 - exponent) >= 10.0 ** (exponent + 1):
        exponent += 1  # rounding carries into the next digit
    return max(0, significant - 1 - exponent)


def companion_places(value: float, other: float) -> int:
    """Decimals for ``other``, a number shown with ``value`` (an interval bound; the std,
    min or max over seeds): the value's :func:`decimals` (``other``'s own when the value is
    0), but never more than ``other``'s own significant digits need, so a bound is never
    shown more precisely than the value, nor padded where the value is near 0:
    "0.0110 [0.0060, 0.0160]", "0.00012 [−0.500, 0.500]"."""
    if value == 0 or not math.isfinite(value):
        return decimals(other)
    if other == 0 or not math.isfinite(other):
        return decimals(value)
    return min(decimals(value), decimals(other))


def fmt_at(value: float, places: int) -> str:
    """``value`` with ``places`` decimals; NaN an en dash, infinities ∞, minus signs true."""
    if math.isnan(value):
        return "–"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    text = f"{value:.{places}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return text.replace("-", "−")


def number(value: float, spec: str = ".2f") -> str:
    """``value`` formatted by the format ``spec`` (".2f", "+.2f", ".0f", ".1%", "g" ...)
    with a true minus sign; a value that prints as zero has no sign ("0.00", never
    "−0.00" or "+0.00"): number(-0.25) -> "−0.25", number(-0.004, ".2f") -> "0.00"."""
    text = format(value, spec)
    mantissa = re.split(r"[eE]", text)[0]
    if re.search(r"\d", mantissa) and not re.search(r"[1-9]", mantissa):
        text = text.replace("-", "", 1).replace("+", "", 1) if text[:1] in "+-" else text
    return minus_signs(text)


def percent(share: float, places: int = 0) -> str:
    """A share (0.25) as a percentage at ``places`` decimals: "25 %"; a share that rounds
    to zero is "0 %", never "−0 %"."""
    return f"{number(share * 100, f'.{places}f')} %"


def fmt(value) -> str:
    """A cell: a float to :data:`SIGNIFICANT` significant digits (the one number format of
    the report), an integer as is, NaN as an en dash, text escaped."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return fmt_at(value, decimals(value))
    if isinstance(value, int):
        return str(value).replace("-", "−")
    return html.escape(minus_signs(value))


def format_value(value: float, compare: str | None = None, threshold: float | None = None) -> str:
    """``value`` to 3 significant digits (:func:`inductionlab.report.tables.decimals`, as
    every table shows it), or more where fewer would print a number that reads the other
    way against ``threshold`` (0.2996 is not "0.300" under "≥ 0.3"); a whole number (a
    count) whole; minus signs true."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    if float(value).is_integer() and abs(value) < 1e6:
        return _minus(str(int(value)))  # a count, or an exact value
    places = decimals(value)
    for extra in range(0, 5):
        text = fmt_at(value, places + extra)
        if compare is None or threshold is None:
            return text
        shown = float(_plain(text))
        same_side = COMPARISONS[compare](shown, threshold) == COMPARISONS[compare](value, threshold)
        if same_side and (shown != threshold or value == threshold):
            return text
    return _minus(repr(value))


def _plain(text: str) -> str:
    """A printed number back in Python's spelling (hyphen-minus)."""
    return text.replace("−", "-")


def bound_text(value: float, bound: float) -> str:
    """An interval bound of ``value`` at the value's decimals, or at its own 3 significant
    digits where those are fewer (:func:`inductionlab.report.tables.companion_places`);
    the bound of a whole value (a count, printed whole) as :func:`format_value` prints it:
    "2 [1.24, 3]", "1 [0.999, 1]"."""
    if bound is None or math.isnan(bound) or math.isinf(bound) or float(value).is_integer():
        return format_value(bound)
    return fmt_at(bound, companion_places(float(value), float(bound)))


def _minus(text: str) -> str:
    """A printed number with the true minus sign the report's tables use (−0.336)."""
    return text.replace("-", "−")


def ranges_phrase(offsets: list[int]) -> str:
    """Sorted integers as runs: [0, 1, 2, 5, 11] -> "0–2, 5 and 11"; [3, 4] -> "3 and 4"."""
    parts, start = [], None
    for k, nxt in zip(offsets, offsets[1:] + [None]):
        start = k if start is None else start
        if nxt != k + 1:
            parts.append(f"{start}–{k}" if k - start >= 2 else
                         f"{start}, {k}" if k > start else str(k))
            start = None
    text = ", ".join(parts)
    head, _, last = text.rpartition(", ")
    return f"{head} and {last}" if head else text
