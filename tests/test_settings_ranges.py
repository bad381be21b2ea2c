"""Settings are range-checked when made (``hivemem.settings.check``): a value of the
wrong type or out of range is an ``InvalidInput`` naming the setting (or the
``HIVEMEM_*`` variable it came from), before any store opens. Found on main: a huge
``embed_batch_size`` made the embedding worker retry one impossible batch forever;
negative limits refused every write with a puzzling message; NaN weights ranked nothing."""

from __future__ import annotations

import pytest

import hivemem
from hivemem import InvalidInput, Settings


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("embed_batch_size", 10**9),
        ("embed_batch_size", 0),
        ("max_content_bytes", -1),
        ("max_batch", -5),
        ("candidate_multiplier", 0),
        ("chunk_tokens", 0),
        ("mmr_lambda", 1.5),
        ("keyword_weight", float("nan")),
        ("half_life_days", 0.0),
        ("llm_timeout", float("inf")),
        ("max_tags", True),  # a bool is not a count
        ("max_tags", 2.5),
        ("track_access", "false"),  # a string is truthy: refused, not misread
        ("fusion", "best"),
        ("decay_profile", "linear"),
        ("http_port", 70_000),
        ("ttl_days", {"manual": -3}),
        ("ttl_days", {"manual": "never"}),
        ("seat_lead", 1e9),  # a cosine's lead is at most 1 here: was accepted
        ("seat_depth", 10**6),
    ],
)
def test_a_value_out_of_range_names_the_setting(name, value):
    with pytest.raises(InvalidInput) as err:
        Settings(**{name: value})
    assert err.value.field == name


def test_related_settings_are_checked_together():
    with pytest.raises(InvalidInput, match="below chunk_tokens") as err:
        Settings(chunk_tokens=100, chunk_overlap_tokens=100)
    assert err.value.field == "chunk_overlap_tokens"
    with pytest.raises(InvalidInput) as err:
        Settings().replace(summarize_min_group=5, summarize_max_group=3)
    assert err.value.field == "summarize_max_group"


def test_edges_of_each_range_are_accepted():
    Settings(
        embed_batch_size=4096,
        embed_dimensions=0,
        decay_weight=0,  # an int where a float is declared
        mmr_lambda=1.0,
        llm_max_retries=0,
        busy_timeout_ms=0,
        ttl_days={"manual": None, "file_index": 0},
        chunk_tokens=8,
        chunk_overlap_tokens=7,
        seat_lead=1.0,
        seat_depth=-1,  # the model's value
    )


def test_an_environment_value_out_of_range_names_the_variable():
    with pytest.raises(InvalidInput) as err:
        Settings.from_env({"HIVEMEM_EMBED_BATCH_SIZE": "1000000000"})
    assert err.value.field == "HIVEMEM_EMBED_BATCH_SIZE" and "4096" in str(err.value)


def test_a_huge_batch_size_never_reaches_the_embedding_worker(db_path):
    with pytest.raises(InvalidInput):
        hivemem.open(db_path, settings=Settings().replace(embed_batch_size=2**40))
    assert not db_path.exists()  # refused before the file was made
