"""How common an English word is, for the regex entity pass: a capitalised word that is a
common word ("Food", "Suggest", "Thought") is capitalised for a title, a heading or a
sentence's start, not because it is a name.

The ranks come from the WordPiece vocabulary already bundled for the local embedder
(``models/bert-base-uncased-vocab.txt``, Apache-2.0; see ``models/README.md``): its whole
words are listed in order of how often they occur in the text BERT was trained on
("the" first), so a word's place among them is a frequency rank that costs no new data
and no download. The file is read once, on the first question (~30k lines, a few ms).
"""

from __future__ import annotations

import functools
from pathlib import Path

VOCAB_FILE = Path(__file__).parent / "models" / "bert-base-uncased-vocab.txt"


@functools.cache
def _ranks() -> dict[str, int]:
    """Rank of each whole alphabetic word of the vocabulary, 0 for the commonest; empty
    when the file cannot be read (then no word is known as common: names are kept)."""
    try:
        lines = VOCAB_FILE.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    ranks: dict[str, int] = {}
    for line in lines:
        if len(line) > 1 and line.isalpha() and line.isascii() and line not in ranks:
            ranks[line] = len(ranks)
    return ranks


def rank(word: str) -> int | None:
    """The frequency rank of ``word`` (lower case) among the vocabulary's whole words,
    None when the vocabulary does not hold it as a whole word (rare words, most names
    of people and places outside the commonest)."""
    return _ranks().get(word)


def inflected(word: str) -> bool:
    """Whether ``word`` (lower case) belongs to a common noun's or verb's family in the
    vocabulary: it is an inflection of a vocabulary word ("archived", "based") or an
    inflection of it is one ("suggest": "suggested"; "goal": "goals"). First names have
    none ("bruno", "rafael", "hugo"), so this tells a name at a sentence's start from the
    common words the uncased vocabulary also holds (its rank cannot: "bruno" 7,204th,
    "answered" 2,302nd). Words of under three letters are never checked."""
    ranks = _ranks()
    if len(word) < 3 or word not in ranks:
        return False
    stems = [word[:-1], word[:-2]] if word.endswith("ed") else []
    if word.endswith("ies"):
        stems.append(word[:-3] + "y")
    if word.endswith("s") and not word.endswith("ss"):
        stems += [word[:-1], word[:-2]]  # "movies", "boxes", "goals"
    if any(len(stem) > 2 and stem in ranks for stem in stems):
        return True
    base = word[:-1] if word.endswith("e") else word
    forms = [word + "s", word + "es", word + "ed", word + "ing", base + "ed", base + "ing"]
    if word.endswith("y"):
        forms += [word[:-1] + "ies", word[:-1] + "ied"]
    return any(form in ranks for form in forms)
