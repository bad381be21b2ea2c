"""``hivemem eval entities``: the labelled sample of real dialogue ships with the package,
and the regex pass's typing is scored per type on its dev and held-out halves."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hivemem.evaluation import entities as entity_eval
from hivemem.frontends.cli import main
from hivemem.providers.entities import EntityType


def test_the_sample_holds_300_labelled_mentions_of_mit_licensed_dialogue_in_two_halves():
    sample = entity_eval.load_sample()
    mentions = [m for s in sample for m in s.mentions]
    assert len(mentions) >= 300
    types = {m[2] for m in mentions}
    assert types <= {t.value for t in EntityType} | {"none"}
    assert {"person", "location", "organization", "tool", "other", "none"} <= types
    assert {s.split for s in sample} == {"dev", "holdout"}
    # Licence: the package is Apache-2.0, LoCoMo is CC BY-NC 4.0; LongMemEval is MIT.
    assert {s.source.split("/")[0] for s in sample} == {"longmemeval"}
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
        # Issue #22: the regex typed three of four "people" wrongly; the bar is .90 for
        # the types it asserts. Entity precision (false spans count against it) is
        # reported beside: .69/.65 on main 129d5f5, .84/.80 on 787c22c, .92/.81 since
        # (docs/retrieval.md; the dev half's bar is the test below).
        assert person["precision"] >= 0.9 and person["said"] >= 10
        assert regex[half]["asserted_precision"] >= 0.9
        assert regex[half]["entity_precision"] >= 0.75
    if "spacy" not in report["extractors"]:
        assert "spacy" in report["not_measured"]
    text = CliRunner().invoke(main, ["eval", "entities"])
    assert "regex / holdout: asserted precision" in text.output
    assert "entity precision" in text.output


def test_entity_precision_counts_an_untyped_entity_right_and_a_false_span_wrong():
    row = entity_eval.Labelled(
        "t", "dev", "The Witcher and Food", (("The Witcher", 0, "other"), ("Food", 16, "none"))
    )
    said = [("Witcher", "witcher", "other"), ("Food", "food", "other")]
    score = entity_eval.Score()
    score.add(row, said)  # "Witcher" is "The Witcher": a leading article is no part of it
    out = score.to_dict()
    assert (out["entity_precision"], out["typed_precision"], out["found_precision"]) == (
        0.5, 0.5, 0.5)  # fmt: skip
    score.add(entity_eval.Labelled("t", "dev", "Max", (("Max", 0, "person"),)), [
        ("Max", "max", "other")])  # fmt: skip
    out = score.to_dict()
    assert (out["entity_precision"], out["typed_precision"]) == (0.667, 0.333)
    assert out["asserted_precision"] is None  # nothing was typed but ``other``


def test_the_dev_half_meets_issue_22s_bar_for_entities_and_organisations():
    """Issue #22's last target: entity precision (false spans count against it) and
    organisation precision at .90. The rules were written against the dev half only; the
    held-out half is held to where it stood when they were done (.811, from .795 on main
    787c22c; docs/retrieval.md says by how much it misses)."""
    report = entity_eval.evaluate(entity_eval.regex_extractor)
    dev, holdout = report["dev"], report["holdout"]
    assert dev["entity_precision"] >= 0.9  # .844 on main 787c22c
    assert dev["per_type"]["organization"]["precision"] >= 0.9  # .846 on main
    assert dev["asserted_precision"] >= 0.9 and dev["per_type"]["person"]["precision"] >= 0.9
    assert holdout["entity_precision"] >= 0.8  # .795 on main
