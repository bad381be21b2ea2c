"""The web inspector (``/ui`` of ``hivemem serve-http``; ``hivemem ui``): server-rendered
pages over the library to see what the agents remember, why a search found it, and fix
it. Jinja2 templates and a little plain JS shipped in the package: no CDN, no build.
See ``docs/inspector.md``."""

from __future__ import annotations

from .routes import PREFIX, Ui, mount

__all__ = ["PREFIX", "Ui", "mount"]
