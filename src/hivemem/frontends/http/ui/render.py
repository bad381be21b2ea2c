"""Templates of the inspector: the Jinja2 environment (autoescape on for every
template, every printed value passed through the store's scrubber first), the page
response with its security headers, and the growth chart as inline SVG numbers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.responses import HTMLResponse

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

# No inline script or style, no third party: escaping is the first defence, this the second.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


def environment(scrub: Callable[[str], str]) -> Environment:
    """The template environment. ``finalize`` scrubs each value before it is escaped,
    so a secret is matched in its raw form whatever characters it holds.

    Markup (what a macro returns: its values were finalized one by one inside it) stays
    markup: scrubbed, then marked safe again. ``Markup`` is a ``str``, and a scrub that
    matched anything returns a plain ``str``, which autoescape would print as text
    (issue 25: every list page showed its filters and badges as literal HTML once the
    vault held a secret). ``[REDACTED]`` holds no character HTML treats specially."""

    def finalize(value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, Markup):
            return Markup(scrub(str(value)))  # noqa: S704 - built from escaped values
        if isinstance(value, str):
            return scrub(value)
        return value

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["q"] = lambda v: quote(str(v), safe="")
    env.filters["when"] = when
    env.filters["day"] = lambda v: v.strftime("%Y-%m-%d") if v else ""
    env.filters["short"] = short
    env.filters["number"] = lambda v: f"{v:,}" if isinstance(v, int) else v
    env.filters["score"] = lambda v: f"{v:.4f}" if isinstance(v, int | float) else v
    return env


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else ""


def short(text: str | None, limit: int = 240) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def page(
    env: Environment, scrub: Callable[[str], str], name: str, code: int = 200, **context: Any
) -> HTMLResponse:
    """A rendered template: scrubbed once more as a whole, with the security headers."""
    html = env.get_template(name).render(**context)
    return HTMLResponse(scrub(html), status_code=code, headers=HEADERS)


def growth_chart(days: Sequence[tuple[str, int]], width: int = 720, height: int = 160) -> dict:
    """Bars (memories created per day, up to the last 90 days with data in range) and the
    cumulative total as a polyline, in SVG user units; the template draws them."""
    if not days:
        return {"bars": [], "line": "", "width": width, "height": height, "empty": True}
    counts = {date.fromisoformat(d): n for d, n in days}
    last = max(counts)
    first = max(min(counts), last - timedelta(days=89))
    before = sum(n for d, n in counts.items() if d < first)
    span = (last - first).days + 1
    series = [
        (first + timedelta(days=i), counts.get(first + timedelta(days=i), 0)) for i in range(span)
    ]
    top = max(n for _, n in series) or 1
    pad, chart_h = 4, height - 24
    step = (width - 2 * pad) / span
    bars, points, total = [], [], before
    grand = before + sum(n for _, n in series) or 1
    for i, (day, n) in enumerate(series):
        total += n
        h = chart_h * n / top
        x = pad + i * step
        bars.append(
            {
                "x": round(x, 1),
                "y": round(chart_h - h, 1),
                "w": round(max(step - 1, 1), 1),
                "h": round(h, 1),
                "day": day.isoformat(),
                "n": n,
            }
        )
        points.append(f"{round(x + step / 2, 1)},{round(chart_h - chart_h * total / grand, 1)}")
    return {
        "bars": bars,
        "line": " ".join(points),
        "width": width,
        "height": height,
        "first": first.isoformat(),
        "last": last.isoformat(),
        "top": top,
        "grand": grand,
        "empty": False,
    }
