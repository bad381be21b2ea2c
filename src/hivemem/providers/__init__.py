"""Pluggable providers: embedders, LLMs, named-entity recognition."""
