"""Decay as the seeds specify it, and the simulation that chose the defaults: decay from
the last access (the assistant seed), the recency-aware access boost (Agent Swarm: full
within 48 h, fading after), and ``hivemem eval decay``."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

import hivemem
from hivemem import InvalidInput, Settings, run_job
from hivemem.evaluation.decay_sim import PROFILES, simulate
from hivemem.frontends.cli import main
from hivemem.retrieval.ranking import access_boost


def test_access_boost_is_full_within_48_hours_and_fades_after():
    full = access_boost(10, 1.5)
    assert full == pytest.approx(1 + 0.5 * (1 - math.exp(-1)))
    assert access_boost(10, 1.5, hours_since_access=47) == pytest.approx(full)
    two_weeks_late = access_boost(10, 1.5, hours_since_access=48 + 14 * 24)
    assert two_weeks_late - 1 == pytest.approx((full - 1) / 2)
    assert access_boost(10, 1.5, hours_since_access=48 + 365 * 24) < 1.001
    assert access_boost(0, 1.5, hours_since_access=1) == 1.0


def test_the_recency_half_life_is_a_setting_as_agent_swarms_env_tunable(
    tmp_path, clock, monkeypatch
):
    """Agent Swarm tunes ``MEMORY_RECENCY_HALF_LIFE_DAYS`` (14); HiveMem's recency profile
    reads ``recency_half_life_days`` (``HIVEMEM_RECENCY_HALF_LIFE_DAYS``), default 14."""
    assert Settings().recency_half_life_days == 14
    monkeypatch.setenv("HIVEMEM_RECENCY_HALF_LIFE_DAYS", "7")
    settings = Settings.from_env().replace(decay_profile="recency", decay_weight=1.0)
    assert settings.recency_half_life_days == 7
    with hivemem.open(tmp_path / "m.db", settings=settings, clock=clock, embedder="hash") as s:
        mem = s.scope("swarm")
        mem.save("The flaky test is test_login_retry", kind="fact")
        clock.advance(days=7)
        [hit] = mem.search("flaky test login retry")
        assert hit.explain.factors["decay"] == pytest.approx(0.5, rel=1e-3)


def test_search_explains_an_access_boost_that_fades_with_the_last_use(mem, clock):
    fact = mem.save("The staging database password rotates every Monday", kind="fact")
    for _ in range(5):
        mem.get(fact.id)  # a get counts an access (a search only restarts the clock)
    fresh = mem.search("staging database password")[0]
    assert fresh.memory.id == fact.id
    boost = 1 + 0.5 * (1 - math.exp(-0.5))  # five earlier uses, the last one just now
    assert fresh.explain.factors["access"] == pytest.approx(boost, rel=1e-3)
    clock.advance(days=30)  # 28 days past the 48 h of full boost: two halvings
    late = mem.search("staging database password")[0]
    five = 0.5 * (1 - math.exp(-0.5))  # still five uses, the last one 30 days ago
    assert late.explain.factors["access"] == pytest.approx(1 + five * 0.25, rel=1e-3)


def test_decay_from_last_access_refreshes_facts_in_use(db_path, clock):
    settings = Settings(decay_from="last_access", default_decay_rate=0.1)
    with hivemem.open(db_path, clock=clock, embedder="none", settings=settings) as store:
        mem = store.scope("a")
        used = mem.save("Deploys need the vpn profile named corp-east", kind="fact")
        idle = mem.save("The printer on floor three jams on glossy paper", kind="fact")
        clock.advance(days=20)
        assert mem.search("vpn profile corp-east")[0].memory.id == used.id  # an access
        clock.advance(days=10)
        [result] = run_job(store, "decay", "a")
        assert result.counts["pruned"] == 1  # the idle one: exp(-0.1 x 30) < 0.05
        assert mem.get(idle.id).status.value == "deleted"
        assert mem.get(used.id).confidence == pytest.approx(math.exp(-0.1 * 10), rel=1e-3)
        clock.advance(days=1)
        mem.get(used.id)  # a get is an access too: the curve starts again
        run_job(store, "decay", "a")
        assert mem.get(used.id).confidence == pytest.approx(1.0, abs=1e-3)


def test_decay_from_last_access_is_the_default_and_created_ignores_access(db_path, clock):
    assert Settings().decay_from == "last_access"
    settings = Settings(default_decay_rate=0.1, decay_from="created")
    with hivemem.open(db_path, clock=clock, embedder="none", settings=settings) as store:
        mem = store.scope("a")
        used = mem.save("Deploys need the vpn profile named corp-east", kind="fact")
        clock.advance(days=20)
        mem.search("vpn profile corp-east")
        clock.advance(days=10)
        run_job(store, "decay", "a")
        assert mem.get(used.id).status.value == "deleted"


def test_an_unknown_decay_from_is_refused_before_anything_changes():
    with pytest.raises(InvalidInput) as err:  # the settings refuse it: no job can start
        Settings(decay_from="yesterday")
    assert err.value.field == "decay_from"


def test_the_simulation_tells_the_profiles_apart():
    chosen = tuple(p for p in PROFILES if p.name in ("exp-0.01-created", "exp-0.1-access"))
    default, assistant = simulate(chosen, days=45, facts_per_day=2, decay_every=5)
    assert default.facts == assistant.facts == 90
    assert default.pruned == 0 and default.found == {"core": 1.0, "burst": 1.0, "once": 1.0}
    # Rate 0.1 from the last access: what nobody uses is gone within a month, what is
    # used weekly stays and is found.
    assert assistant.kept["core"] == 1.0 and assistant.found["core"] == 1.0
    assert assistant.kept["once"] < 0.6 and assistant.pruned > 0
    assert assistant.recent_found > 0.9


def test_eval_decay_command(tmp_path):
    result = CliRunner().invoke(
        main,
        ["--db", str(tmp_path / "x.db"), "eval", "decay", "--days", "8",
         "--facts-per-day", "1", "--profile", "exp-0.1-access", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [outcome] = json.loads(result.stdout)
    assert outcome["profile"] == "exp-0.1-access" and outcome["facts"] == 8
    bad = CliRunner().invoke(main, ["eval", "decay", "--profile", "nope"])
    assert bad.exit_code != 0 and "valid: exp-0.01-created" in bad.output
