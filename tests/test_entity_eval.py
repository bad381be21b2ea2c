"""``hivemem eval entities``: the labelled sample of real dialogue ships with the package,
and the regex pass's typing is scored per type on its dev and held-out halves."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hivemem.evaluation import entities as entity_eval
from hivemem.frontends.cli import main
from hivemem.providers.entities import EntityType


def test_the_sample_holds_300_labelled_mentions_of_both_corpora_in_two_halves():
    sample = entity_eval.load_sample()
    mentions = [m for s in sample for m in s.mentions]
    assert len(mentions) >= 300
    types = {m[2] for m in mentions}
    assert types <= {t.value for t in EntityType} | {"none"}
    assert {"person", "location", "organization", "tool", "other", "none"} <= types
    assert {s.split for s in sample} == {"dev", "holdout"}
    assert {s.source.split("/")[0] for s in sample} == {"locomo", "longmemeval"}
    for s in sample:  # every span is where it says, in its sentence
        for text, start, _ in s.mentions:
            assert s.sentence[start : start + len(text)] == text


def test_scoring_counts_a_wrong_type_and_a_non_entity_against_precision():
    row = entity_eval.Labelled(
        "t", "dev", "Hey Jo, Nature and Paris", (("Jo", 4, "person"), ("Paris", 19, "location"))
    )
    said = [("Jo", "jo", "person"), ("Nature", "nature", "person"), ("Paris", "paris", "person")]
    score = entity_eval.Score()
    score.add(row, said)
    out = score.to_dict()
    assert out["per_type"]["person"] == {
        "precision": 0.333, "recall": 1.0, "said": 3, "labelled": 1, "right": 1}  # fmt: skip
    assert out["per_type"]["location"]["recall"] == 0.0
    assert out["found_precision"] == 0.667


def test_eval_entities_reports_per_type_on_both_halves_and_why_spacy_is_not_measured():
    result = CliRunner().invoke(main, ["eval", "entities", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    regex = report["extractors"]["regex"]
    for half in ("dev", "holdout"):
        person = regex[half]["per_type"]["person"]
        # Issue #22: the regex typed three of four "people" wrongly; the bar is .90.
        assert person["precision"] >= 0.9 and person["said"] >= 20
        assert regex[half]["asserted_precision"] >= 0.9
    if "spacy" not in report["extractors"]:
        assert "spacy" in report["not_measured"]
    text = CliRunner().invoke(main, ["eval", "entities"])
    assert "regex / holdout: asserted precision" in text.output
