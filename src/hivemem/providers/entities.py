"""Cheap entity mentions for the write hot path: names, @handles, #tags, emails, URLs, dates.

Contract: ``extract(text)`` returns each entity once, keyed by ``(canonical, type)``, in
order of first appearance, at most ``max_mentions`` of them; ``canonical(name)`` is the
lookup key shared by writes and queries; ``query_names(text)`` lists candidate keys for a
query, without relying on capital letters. All functions are pure and never raise on
text (empty, huge, emoji, lone surrogates).

Why regex: this runs inside ``add_episode``, whose budget is well under a millisecond,
so it must cost tens of microseconds for a sentence. It therefore over-generates (any
capitalised word that is not a known stopword counts as a name, except a sentence's first
word when it is a common word: ``_COMMON_INITIAL``) and under-understands
(no coreference, no NER model). Accurate extraction is a later maintenance job that can
afford a model; this module only has to be fast, predictable and good enough to link
"Caroline" in a turn to "caroline" in a question.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache, update_wrapper
from typing import Any, TypeVar

from . import common_words
from . import entity_cues as cues
from .entity_context import fold as _fold
from .entity_context import in_code as _in_code
from .entity_context import opens_sentence as _opens_sentence
from .entity_context import org_cue as _org_cue
from .entity_context import person_cue as _person_cue
from .entity_context import place_cue as _place_cue
from .entity_layout import MID_SENTENCE_COMMON_RANK
from .entity_layout import heading as _heading
from .entity_layout import title_case_label as _title_case_label

# Names and runs of capitals the pure functions below were last asked about: a
# conversation names the same people and places turn after turn (each answer is a few
# microseconds of Python; a hit is a dictionary lookup). Only short ones: a cache of huge
# runs would hold their memory.
_CACHED = 4096
_CACHED_LENGTH = 120
_T = TypeVar("_T")
_REMEMBERED: list[Any] = []  # the caches (tests clear and count them)


def _cached(fn: Callable[[str], _T]) -> Callable[[str], _T]:
    """``fn`` (pure) remembering its answers for texts of at most ``_CACHED_LENGTH``."""
    remembered = lru_cache(maxsize=_CACHED)(fn)
    _REMEMBERED.append(remembered)

    def call(text: str) -> _T:
        return remembered(text) if len(text) <= _CACHED_LENGTH else fn(text)

    return update_wrapper(call, fn)


class EntityType(StrEnum):
    PERSON = "person"  # a given name, a title, or a name the text addresses or relates to
    ORGANIZATION = "organization"
    PROJECT = "project"
    LOCATION = "location"
    TOOL = "tool"
    CONCEPT = "concept"
    MENTION = "mention"
    HASHTAG = "hashtag"
    EMAIL = "email"
    URL = "url"
    DATE = "date"
    OTHER = "other"  # a name whose kind the cues cannot tell (a product, a work, ...)


# Types a more accurate extractor (spaCy, the LLM) may replace: the regex's guesses.
GUESSED_TYPES = frozenset({EntityType.PERSON, EntityType.OTHER})

# Other names of the types: ADR 005's schema writes ``org`` (person | project | org |
# concept | tool) where the assistant's extension writes ``organization``.
ENTITY_TYPE_ALIASES = {
    "org": EntityType.ORGANIZATION,
    "organisation": EntityType.ORGANIZATION,
}


def entity_type(value: str | EntityType) -> EntityType | None:
    """The type ``value`` names, by its name or an alias (``org``), case and spaces
    ignored; None for anything else."""
    if isinstance(value, EntityType):
        return value
    if not isinstance(value, str):
        return None
    key = value.strip().lower()
    try:
        return EntityType(key)
    except ValueError:
        return ENTITY_TYPE_ALIASES.get(key)


# The cues of ``name_type``: legal-form and institution words that end an organisation's
# name, words that open a project's, a small gazetteer of countries and large cities, and
# tools an agent's memory often names. Lower case; multi-word entries are canonical names.
_ORG_SUFFIX_TEXT = """
    corp corporation inc incorporated ltd limited llc llp gmbh ag sa sas sarl bv nv plc
    co company pty group holdings labs lab foundation university institute bank partners
    ventures technologies systems software solutions association agency ministry
    council committee"""
_ORG_SUFFIXES = frozenset(_ORG_SUFFIX_TEXT.split())
_PROJECT_HEADS = frozenset({"project", "operation", "initiative", "programme", "program"})
# Words after a project head that make a role or a document, not a project's name
# ("Program Chair", "Project Manager", "Project Plan").
_PROJECT_ROLE_TEXT = """manager managers management lead leader leads coordinator chair director
    officer owner team plan plans proposal office assistant sponsor"""
_PROJECT_ROLES = frozenset(_PROJECT_ROLE_TEXT.split())
_PLACE_TEXT = """
    afghanistan albania algeria argentina armenia australia austria azerbaijan bangladesh
    belarus belgium bolivia bosnia brazil bulgaria cambodia cameroon canada chile china
    colombia croatia cuba cyprus czechia denmark ecuador egypt england estonia ethiopia
    finland france germany ghana greece hungary iceland india indonesia iran iraq
    ireland israel italy jamaica japan kazakhstan kenya korea kosovo latvia lebanon
    lithuania luxembourg malaysia mali malta mexico moldova monaco mongolia montenegro
    morocco nepal netherlands nigeria norway pakistan panama paraguay peru philippines
    poland portugal qatar romania russia scotland senegal serbia singapore slovakia
    slovenia somalia spain sudan sweden switzerland syria taiwan tanzania thailand tunisia
    turkey uganda ukraine uruguay uzbekistan venezuela vietnam wales yemen zambia zimbabwe
    europe asia africa america antarctica oceania
    amsterdam athens atlanta auckland austin baghdad bangkok barcelona beijing beirut
    belgrade berlin bern bogota boston brisbane brussels bucharest budapest cairo calgary
    chicago copenhagen dallas delhi denver dubai dublin edinburgh frankfurt geneva glasgow
    hamburg hanoi helsinki houston istanbul jakarta jerusalem johannesburg kyiv kiev lagos
    lima lisbon liverpool london lyon madrid manchester manila marseille melbourne miami
    milan montreal moscow mumbai munich nairobi naples oslo ottawa paris perth philadelphia
    prague riga rome rotterdam santiago seattle seoul shanghai singapore sofia stockholm
    stuttgart sydney taipei tallinn tehran tokyo toronto tunis turin vancouver venice
    vienna vilnius warsaw washington zagreb zurich cologne dresden leipzig bremen hanover
    nuremberg osaka kyoto mumbai bangalore chennai kolkata karachi lahore"""
_PLACES = frozenset(_PLACE_TEXT.split()) | frozenset(
    {
        "new york", "new york city", "los angeles", "san francisco", "san diego", "san jose",
        "hong kong", "new delhi", "buenos aires", "rio de janeiro", "sao paulo", "são paulo",
        "mexico city", "cape town", "tel aviv", "kuala lumpur", "abu dhabi", "las vegas",
        "new zealand", "south africa", "south korea", "north korea", "saudi arabia",
        "united states", "united kingdom", "united arab emirates", "czech republic",
        "sri lanka", "costa rica", "puerto rico", "north america", "south america",
        "new jersey", "new mexico", "st petersburg", "saint petersburg", "the hague",
    }
)  # fmt: skip
_TOOL_TEXT = """python javascript typescript java kotlin rust golang ruby php perl scala haskell
    elixir erlang clojure sql sqlite postgresql postgres mysql mariadb mongodb redis
    elasticsearch opensearch kafka rabbitmq docker kubernetes terraform ansible helm nginx
    linux ubuntu debian fedora windows macos ios android git github gitlab bitbucket
    jira confluence slack figma trello asana jenkins circleci vscode vim emacs
    pycharm intellij xcode react vue angular svelte django flask fastapi
    nodejs deno npm pip conda pytorch tensorflow numpy pandas jupyter excel
    chatgpt copilot openai ollama vllm grafana prometheus datadog sentry
    airflow spark hadoop snowflake bigquery redshift tableau looker aws azure gcp heroku
    vercel netlify cloudflare twilio outlook gmail dropbox"""
_TOOLS = frozenset(_TOOL_TEXT.split()) | frozenset(
    {"google sheets", "visual studio", "visual studio code", "google cloud"}
)


@_cached
def name_type(name: str) -> EntityType:
    """The type of a proper name by cheap cues, without its context: an organisation's
    legal form or institution word at its end ("Acme Corp", "British Airways"),
    "Project"/"Operation" at its start ("Project Alpha"), the bundled gazetteer of
    countries and large cities or a place word ("Berlin", "Fort Wayne", "Vernal Falls"),
    known tools and apps ("PostgreSQL", "Netflix"), a people's or language's name
    ("Korean": concept), a given name or a title ("Caroline", "Dr. Okafor": person);
    otherwise ``other``, a name whose kind the regex cannot tell (``extract`` makes it a
    person where the text addresses or relates to it: "Hey Jo", "my dog Pepper")."""
    key = canonical(name)
    words = key.replace(".", "").split()
    if not words:
        return EntityType.OTHER
    many = len(words) > 1
    if len(words) > 2 and words[1] == "of" and words[0] in cues.OFFICES:
        return EntityType.OTHER  # "Dean of Wharton Business School": an office (``_label``)
    if many and words[-1] == "city" and " ".join(words[:-1]) in _PLACES and key not in _PLACES:
        return EntityType.ORGANIZATION  # "Manchester City": a club ("Mexico City" is listed)
    if many and all(word in _ORG_SUFFIXES for word in words):
        return EntityType.OTHER  # "Pty Ltd": legal forms whose name was cut off
    if many and (words[-1] in _ORG_SUFFIXES or words[-1] in cues.ORG_TAILS):
        return EntityType.ORGANIZATION
    if len(words) > 2 and words[1] in ("of", "for") and words[0] in _ORG_SUFFIXES:
        return EntityType.ORGANIZATION  # "University of Michigan", "Bank of America"
    # "Institute for Advanced Study", "Department of Defense" (not "League of Legends")
    institution = len(words) > 2 and words[0] in cues.FOR_HEADS
    if institution and (words[1] == "for" or (words[1] == "of" and words[0] != "league")):
        return EntityType.ORGANIZATION
    if key in cues.ORGANIZATIONS:
        return EntityType.ORGANIZATION
    if many and words[0] in _PROJECT_HEADS and words[1] not in _PROJECT_ROLES:
        return EntityType.PROJECT
    if (
        key in _PLACES
        or key in cues.REGIONS
        or (many and (words[0] in cues.PLACE_HEADS or words[-1] in cues.PLACE_TAILS))
    ):
        return EntityType.LOCATION
    if name.isupper() and key in cues.PLACE_ACRONYMS:
        return EntityType.LOCATION
    if key in _TOOLS or key in cues.APPS or key in cues.PRODUCTS:
        return EntityType.TOOL
    if key in cues.DEMONYMS or (key[-1:] == "s" and key[:-1] in cues.DEMONYMS):  # "Egyptians"
        return EntityType.CONCEPT
    if _LEADING_TITLE.match(canonical_with_title(name)):
        return EntityType.PERSON
    if _plain(words[0]) in cues.GIVEN_NAMES and not (not many and name.isupper()):
        return EntityType.PERSON  # not "GAIL", "PAM", "MIA": one capital word is an acronym's shape
    return EntityType.OTHER


def _plain(word: str) -> str:
    """``word`` without accents ("émile" → "emile"), for the given-name list. An ASCII
    word is returned as it is: most are, and the decomposition was a sixth of the pass's
    CPU on LoCoMo's turns."""
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def canonical_with_title(name: str) -> str:
    """``canonical`` without the title stripped ("dr. smith"): for the title cue."""
    return _WS.sub(" ", unicodedata.normalize("NFC", name).casefold()).strip()


def without_legal_form(key: str) -> str | None:
    """An organisation's canonical name without its legal-form or institution word
    ("acme corp" → "acme"), or None when it has none."""
    words = key.split()
    if len(words) > 1 and words[-1].replace(".", "") in _ORG_SUFFIXES:
        return " ".join(words[:-1])
    return None


def lookup_keys(name: str) -> list[str]:
    """The keys an entity called ``name`` may be stored under: its canonical name and,
    when the whole name is a date in any common form ("8 May 2023", "May 8, 2023",
    "2023-05-08"), the date's key (``2023-05-08``)."""
    keys = [canonical(name)]
    stripped = " ".join(name.split())
    match = _DATE.fullmatch(stripped)
    if match is not None:
        date_key = _date_canonical(stripped)
        if date_key and date_key not in keys:
            keys.append(date_key)
    return keys


@dataclass(frozen=True, slots=True)
class Mention:
    name: str  # the surface form as written, cleaned ("Caroline", "@alice", "8 May 2023")
    canonical: str  # the lookup key, see canonical()
    type: EntityType


_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3,
    "apr": 4, "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7,
    "aug": 8, "august": 8, "sep": 9, "sept": 9, "september": 9, "oct": 10,
    "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_TITLES = frozenset({"mr", "mrs", "ms", "mx", "dr", "prof"})
_CONNECTORS = frozenset({"of", "de", "van", "von", "der", "del", "da", "di", "du", "la", "le"})
# "for" joins only after an institution's word ("Institute for Advanced Study"): a run
# may hold it, ``_names_in_run`` cuts it anywhere else ("Thanks Sam for Lunch").
_JOINERS = _CONNECTORS | {"for"}
# Lower-case tails that make a name an adjective ("Berlin-based", "Acme-owned"): the
# stem before the hyphen is the name, and the word ends it.
_MODIFIER_TAIL_TEXT = """based born bred made built owned run led backed funded powered driven
    focused centric specific native friendly compatible related style like wide level only
    heavy free certified approved sponsored headquartered"""
_MODIFIER_TAILS = frozenset(_MODIFIER_TAIL_TEXT.split())

# Capitalised words that are not names: sentence starters, function words, pronouns,
# greetings and interjections, plus month and weekday names (those belong to dates).
_STOPWORD_TEXT = """
    i i'm i've i'll i'd a an the this that these those there here it it's its what what's when
    where who whom whose why how which whatever whenever wherever hey hi hello yo dear thanks
    thank thx ty yes yeah yep yup no nope nah oh ooh ah aw aww wow omg lol lmao haha hahaha hmm
    um uh ugh yay hooray cheers bye goodbye welcome ok okay sure well so but and or nor yet if
    because since while though although as at in on of for from to with without by about into
    onto over under after before during until upon also just maybe perhaps really very not never
    always sometimes now then today tomorrow yesterday tonight morning evening night please
    sorry great good nice cool awesome amazing love congrats congratulations happy glad lucky
    fun interesting true right my me mine myself we we're we've we'll us our ours you you're
    you've you'll your yours he he's him his she she's her hers they they're they've them their
    theirs do did does don't didn't doesn't is isn't are aren't was wasn't were weren't be been
    being am have has had haven't hasn't can can't could couldn't would wouldn't should
    shouldn't will won't shall might must let let's that's there's here's who's some any all
    every each both most many much more other another such no none everyone someone anyone
    nobody everything something anything nothing first second last next one two three went got
    get going gonna think guess hope feel looks sounds see take make keep check try remember
    anyway actually btw
"""
_STOPWORDS = frozenset([*_STOPWORD_TEXT.split(), *_MONTHS, *_WEEKDAYS])


# Capitalised only because they open a sentence: frequent sentence-initial words that
# are not names (verbs of a report or an instruction, nouns and adverbs an agent's notes
# open with). Found on main: "Bought apples." and "Coffee is great." linked entities
# "bought" and "coffee" of type person. Only a sentence's first word is checked against
# them (and against ``_COMMON_ENDINGS``); inside a sentence a capital still makes a name.
_COMMON_INITIAL_TEXT = """
    bought made said told saw found gave took came left felt thought knew asked called
    wanted needed used tried started finished moved met played watched visited worked
    lived loved liked hated learned learnt wrote read ran paid sent built fixed added
    removed deleted updated changed installed deployed released merged tested opened
    closed set put ate drank cooked baked painted drew sang danced walked drove flew
    add use run call ask tell send open close write start stop note update remove delete
    fix install build deploy release merge test review plan book buy pay meet join visit
    move bring call ship prefer need want like avoid ensure consider follow save store
    find look watch listen wait hold turn bring show give leave stay work live
    coffee tea lunch dinner breakfast home school family friends kids parents weekend
    user users customer customers client clients team meeting meetings project projects
    task tasks issue issues bug bugs deadline budget price cost version release notes
    weather music art painting reading running cooking traveling
    travelling hiking swimming camping dancing writing drawing gardening shopping
    honestly finally unfortunately fortunately luckily hopefully basically recently
    currently usually normally definitely seriously probably obviously clearly apparently
    eventually initially generally especially certainly originally personally lately
    mostly only still even already again instead otherwise however therefore besides
    meanwhile overall later earlier soon once often usually quite pretty totally
    absolutely exactly indeed sadly thankfully lol great
    old new big small little best better worst last same different important
    everybody somebody anybody people things stuff life time work job jobs
    """
_COMMON_INITIAL = frozenset(_COMMON_INITIAL_TEXT.split())
# Endings of words no first name has (checked at a sentence's start only):
# gerunds, -tion/-sion nouns, -ness, -ment, -ism, -ful, -ous, -able/-ible, -ize verbs
# ("Summarize The Great Gatsby", "Optimize the page").
_COMMON_ENDINGS: tuple[str, ...] = ("ing", "tion", "sion", "ness", "ment", "ism", "ful", "ous")
_COMMON_ENDINGS += ("able", "ible", "ize")
_NOUN_ENDINGS = ("ism", "ness", "ment", "tion", "sion")  # no name's, inside a sentence


def _common_word(name: str) -> bool:
    """A sentence's first word that is a common word, not a name (see above)."""
    key = _fold(name)
    if " " in key:
        return False
    return key in _COMMON_INITIAL or (len(key) > 5 and key.endswith(_COMMON_ENDINGS))


def _common_capital(name: str, first: bool) -> bool:
    """Whether a one-word name that no list or cue typed is a common word written with a
    capital: any word of the vocabulary at a sentence's start ("Suggest", "Somehow",
    "Archived"), a common one inside a sentence ("Food", "Thought", "Women"); shouting
    counts (an all-capital "GOAL" or "MONTH" of four letters or more). A word with a
    capital inside ("ForgeFX", "McLellan", "TikTok") or a hyphen ("Asian-American") is a
    name's shape and kept; so are two- and three-letter acronyms (``COMMON_ACRONYMS``
    drops the common ones)."""
    if " " in name:  # a name of legal forms alone ("Pty Ltd") has lost its name
        return all(_fold(word).rstrip(".") in _ORG_SUFFIXES for word in name.split())
    upper = name.isupper()
    if upper and len(name) < 4:
        return False
    if not upper and _INNER_CAPITAL.search(name, 1):
        return False
    key = _fold(name)
    if not first and len(key) > 6 and key.endswith(_NOUN_ENDINGS):
        return True  # "Shamanism", "Usefulness": a noun, whatever its rank
    found = common_words.rank(key)
    if found is None:
        return False
    return first or found < MID_SENTENCE_COMMON_RANK


# Verbs after a sentence's first word that make it the subject of a past or reported act
# ("Bruno answered", "Hugo said"): a speech verb, a common irregular past or a regular
# past (-ed) of a vocabulary word; an adverb may stand between ("Boris also said"). Not
# the copula, a modal or an -s form: "Nature is", "Yoga can", "Tough times" on LoCoMo.
_PAST_TEXT = """went came got made took gave left felt knew saw found ran bought brought
    sent spent built kept lost won paid sat stood began drove flew ate wrote did had"""
_PAST = cues.words(_PAST_TEXT) | cues.SPEECH_VERBS
# Past participles that follow an intensifier as adjectives ("Super excited!").
_FEELING_TEXT = """excited pumped thrilled stoked interested tired bored worried scared
    amazed surprised impressed inspired motivated relieved pleased delighted blessed
    obsessed exhausted stressed overwhelmed"""
_FEELINGS = cues.words(_FEELING_TEXT)
_BETWEEN = cues.words("also just never already still then finally always often now")
_NEXT_TWO = re.compile(r" ([a-z][a-z'’]*)(?: ([a-z][a-z'’]*))?")


def _acts(name: str, text: str, end: int) -> bool:
    """Whether a sentence's first word that the vocabulary holds is a name after all
    because a past verb follows it ("Bruno answered Ana", "Rafael deployed the fix"): it
    is one word, of no common noun's or verb's family (``common_words.inflected``: not
    "Suggest", "Archived", "Goal"), not an adverb in -ly, and followed neither by a comma
    ("Somehow, ...") nor an object ("Mail the form"). Found at merge: the vocabulary is
    uncased and holds most first names, so "Bruno answered Ana" had lost Bruno."""
    key = _fold(name)
    if " " in key or key.endswith("ly") or common_words.inflected(key):
        return False
    after = _NEXT_TWO.match(text, end)
    if after is None:
        return False
    verb = after[1]
    if verb in _BETWEEN or (verb.endswith("ly") and len(verb) > 4):
        verb = after[2] or ""
    if verb in _PAST:
        return True
    if not verb.endswith("ed") or len(verb) < 5 or verb in _FEELINGS:
        return False
    return any(common_words.rank(stem) is not None for stem in (verb, verb[:-1], verb[:-2]))


# A model's number after a brand's name: "-1" of "Boss DS-1", " 5" of "Fitbit Charge 5",
# " 80D" of "Canon EOS 80D" (not " 50mm", " 2.8", " 5%" nor ' 7"').
_MODEL_NUMBER = re.compile(r"-\d+[^\W_]*(?![\w-])| \d+[A-Z]{0,2}(?![\w%\"”″'’-]|[.,:/]\d)")
_LABEL_NUMBER = re.compile(r" (?:\d{1,3}|[IVX]+)(?![\w-]|[.,/]\d)")  # "Module 3", "Phase II"
_PLACE_LIKE = frozenset({EntityType.OTHER, EntityType.ORGANIZATION})
_PRODUCT_LIKE = frozenset({EntityType.OTHER, EntityType.TOOL})  # not "Caroline Smith 3 times"
_ORG_LIKE = frozenset({EntityType.OTHER, EntityType.TOOL})
_PLACE_NOUN_AFTER = re.compile(rf" (?:{'|'.join(sorted(cues.PLACE_NOUNS))})\b")


def _label(name: str, text: str, end: int) -> bool:
    """Whether a name no list or cue typed is a label or a role, not a name: a common
    noun (one of a family in the vocabulary: ``common_words.inflected``) numbered
    ("Module 3", "Objective 2", "Chapter IV"; not "Avatar 2", "Battlefield 1" nor "Canon
    24-70mm") or lettered ("Cat B", "Plan B"; not "Booker T"), or a project word before
    a role's ("Program Chair", "Project Manager"), or a role's title ("Senior Software
    Engineer", "Assistant Director": ``ROLE_TAILS``)."""
    words = name.split(" ")
    head = _fold(words[0])
    if len(words) == 1:
        return common_words.inflected(head) and bool(_LABEL_NUMBER.match(text, end))
    if len(words) == 2 and len(words[1]) == 1 and words[1].isupper():
        return common_words.inflected(head)
    if head in _PROJECT_HEADS and _fold(words[1]) in _PROJECT_ROLES:
        return True
    if len(words) > 2 and words[1] == "of" and head in cues.OFFICES:
        return True
    return _fold(words[-1]) in cues.ROLE_TAILS and all(
        name_type(word) is EntityType.OTHER for word in words[:-1]
    )


def _common_opener(name: str) -> bool:
    """Whether the first word of a sentence's run is no part of the name after it
    ("Adding NYC", "Alright Sam")."""
    word = name.split(" ", 1)[0]
    key = _fold(word)
    return key in cues.NOT_NAMES or _common_word(word) or (len(key) > 4 and key.endswith("ly"))


def _cased_letters() -> str:
    """A regex class of upper- and titlecase letters (``re`` has no ``\\p{Lu}``), from the
    BMP blocks that hold cased scripts only, to keep the import cheap."""
    spans: tuple[tuple[int, int], ...] = ((0x0, 0x600), (0x1000, 0x1100), (0x1300, 0x1400))
    spans += ((0x1C00, 0x1D00),)
    spans += ((0x1E00, 0x2000), (0x2C00, 0x2D00), (0xA600, 0xA800), (0xFF00, 0x10000))
    chars = (chr(code) for lo, hi in spans for code in range(lo, hi))
    cased = (c for c in chars if c.isalpha() and (c.isupper() or c.istitle()))
    return "[" + "".join(map(re.escape, cased)) + "]"


_UPPER = _cased_letters()
_INNER_CAPITAL = re.compile(_UPPER)  # a capital inside a word: "ForgeFX", "TikTok"
_LETTER = r"[^\W\d_]"
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
_MONTH += r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_MONTH_OR_DAY = "|".join(m.title() for m in (*_MONTHS, *_WEEKDAYS))
# A capitalised word, not a month or weekday, not glued to an email or URL part.
_WORD = (
    rf"(?!(?:{_MONTH_OR_DAY})\b){_UPPER}(?:{_LETTER}|['’-](?={_LETTER}))*['’]?"
    r"(?![\w@]|\.\w)"
)
_TITLE = r"(?:Mr|Mrs|Ms|Mx|Dr|Prof)\.?"
_NAME_RUN = re.compile(
    rf"(?={_UPPER})(?<![\w@#/.-])(?:{_TITLE} )?{_WORD}"
    rf"(?:(?: (?:{'|'.join(sorted(_CONNECTORS))}|for(?! {_TITLE} )))? {_WORD})*"
)
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = re.compile(
    r"(?<![\w-])(?=[\djfmasond])(?:"
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"  # 2023-05-08
    rf"|{_ORDINAL}(?: of)? {_MONTH}(?:,? \d{{4}})?"  # 8 May 2023, 8 May
    rf"|{_MONTH}(?: {_ORDINAL},? \d{{4}}|,? \d{{4}}| {_ORDINAL})"  # May 8, 2023; May 2023; May 8
    r")(?!\w)",
    re.IGNORECASE,
)
_DATE_PARTS = re.compile(r"(\d{4})|(\d{1,2})|([^\W\d_]+)")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"(?<![\w@])(?:https?://|www\.)[^\s<>\"'()\[\]{}]+", re.IGNORECASE)
# A literal first, the look-behind after it: re then jumps from one "@" or "#" to the next.
_AT_HANDLE = re.compile(r"@(?<![\w@.+-]@)\w+")
_HASHTAG = re.compile(r"#(?<![\w&#]#)(?!\d+(?!\w))\w+")
_SPEAKER = re.compile(rf"\s*({_UPPER}[\w'’.-]*(?: {_UPPER}[\w'’.-]*){{0,2}}):(?!//)")
_DIGIT = re.compile(r"\d")
_WS = re.compile(r"\s+")
_LEADING_TITLE = re.compile(r"^(?:mr|mrs|ms|mx|dr|prof)\.?\s+(?=\S)")
_CLAUSE_BREAK = re.compile(r"[^\w\s'’-]+")
_TOKEN = re.compile(r"\w+(?:['’-]\w+)*")


@_cached
def canonical(name: str) -> str:
    """The lookup key for a name: NFC, casefolded, whitespace collapsed, curly apostrophes
    straightened, one leading ``@``/``#`` dropped, leading titles (Mr, Dr, ...) and a
    trailing possessive ('s) stripped. ``canonical("Dr. Caroline’s") == "caroline"``."""
    key = _WS.sub(" ", unicodedata.normalize("NFC", name).casefold()).strip()
    key = key.replace("’", "'")
    if key[:1] in ("@", "#"):
        key = key[1:]
    key = _LEADING_TITLE.sub("", key, count=1)
    if key.endswith("'s") and len(key) > 2:
        key = key[:-2]
    return key.rstrip("'")


@_cached
def _names_in_run(run: str) -> tuple[str, ...]:
    """Split one run of capitalised words into names: stopwords and possessives end a
    name, titles start one, connectors only join, more than four words is a heading."""
    words = run.split(" ")
    capitals = [w for w in words if w not in _JOINERS]
    # trigger: a run of all-caps words, e.g. "I LOVE THIS"; why: that is shouting, not a
    # row of acronyms; outcome: only a run with no stopword and no shouted word of over
    # six letters in it survives ("DI MAARRIAAAAAA" is a cheer, not "DI").
    shouting = len(capitals) > 1 and all(w.isupper() for w in capitals)
    if shouting and any(_fold(w) in _STOPWORDS or len(w) > 6 for w in capitals):
        return ()
    names: list[str] = []
    segment: list[str] = []
    for index, word in enumerate(words):
        key = _fold(word).rstrip(".")
        possessive = key.endswith(("'s", "'"))
        if possessive:
            word = word[:-2] if key.endswith("'s") else word[:-1]
            key = _fold(word)
        stem, dash, tail = word.rpartition("-")
        adjective = tail.islower() and index == len(words) - 1
        if dash and stem and (tail.casefold() in _MODIFIER_TAILS or adjective):
            # "New York-based" -> "New York"; a lower-case tail ending a run makes a
            # compound adjective of any word ("SEO-friendly", "Human-written"; not
            # "Ruby-crowned Kinglet"): its stem is the candidate
            if not _no_name(stem, _fold(stem)):
                segment.append(stem)
            _close(segment, names)
            segment = []
            continue
        if word == "for" and not (segment and _fold(segment[-1]) in cues.FOR_HEADS):
            _close(segment, names)
            segment = []
        elif word in _JOINERS:
            if segment:
                segment.append(word)
        elif key in _TITLES:
            _close(segment, names)
            segment = [word]
        elif segment and _inside_name(word, key, segment, words[index + 1 : index + 3]):
            segment.append(word)  # "Ready Player One", "Harvard AI Group"
        elif key in _STOPWORDS or _no_name(word, key):
            _close(segment, names)
            segment = []
        else:
            segment.append(word)
        if possessive:
            _close(segment, names)
            segment = []
    _close(segment, names)
    return tuple(names)


def _no_name(word: str, key: str) -> bool:
    """A capitalised word that is no name: shouting (all capitals, over six letters), a
    time zone, weekday abbreviation or interjection ("UTC", "Tues", "Oof"), or an
    acronym of a common noun written as one, or its plural ("API", "TV", "CRMs"; not
    "Ok" or "Pin")."""
    if word.isupper() and len(word) > 6:
        return True
    if key in cues.NOT_NAMES:
        return True
    if word == word.capitalize():
        return False
    return key in cues.COMMON_ACRONYMS or (key[-1:] == "s" and key[:-1] in cues.COMMON_ACRONYMS)


_WEEKDAY_PLURALS = frozenset(day + "s" for day in _WEEKDAYS)


def _inside_name(word: str, key: str, before: list[str], after: list[str]) -> bool:
    """Whether a word that would cut a name continues the one before it: "One" or a
    weekday's plural after a name's word ("Ready Player One", "Boz One Pty Ltd", "Taco
    Tuesdays"), or a common-noun acronym between a short name and the run's last word
    ("Harvard AI Group", "Gochujang BBQ Sauce"; not "the API" nor "Acme API", nor a run
    that would be too long to be one name). ``after``: the run's next two words at most
    (a slice of the rest would cost a huge one-line run quadratic time)."""
    if key == "one" or key in _WEEKDAY_PLURALS:
        return True  # "Ready Player One", "Turbocharged Tuesdays"
    if key not in cues.COMMON_ACRONYMS or len(after) != 1 or len(before) > 2:
        return False
    following = _fold(after[0]).rstrip(".")
    return following not in _STOPWORDS and not _no_name(after[0], following)


def _close(segment: list[str], names: list[str]) -> None:
    while segment and (segment[-1] in _JOINERS or _fold(segment[-1]).rstrip(".") in _TITLES):
        segment.pop()
    proper = [w for w in segment if w not in _JOINERS and _fold(w).rstrip(".") not in _TITLES]
    if not proper or len(proper) > 4 or (len(segment) == 1 and len(segment[0]) < 2):
        return
    names.append(" ".join(segment))


def _date_canonical(surface: str) -> str:
    year = month = day = None
    for match in _DATE_PARTS.finditer(surface):
        if match[1]:
            year = int(match[1])
        elif match[2]:
            number = int(match[2])
            if month is None and year is not None:
                month = number  # ISO: year first, then month, then day
            else:
                day = number
        elif match[3].casefold() in _MONTHS:
            month = _MONTHS[match[3].casefold()]
    if year is None and surface[0].islower():
        return ""  # "may 2" is more likely the verb than a date; "2 may" is kept
    if year is not None and month is not None and day is not None and 1 <= day <= 31:
        return f"{year:04d}-{month:02d}-{day:02d}"
    if year is not None and month is not None and day is None:
        return f"{year:04d}-{month:02d}"
    return _WS.sub(" ", surface.casefold())


def extract(text: str, max_mentions: int = 32) -> list[Mention]:
    """Entity mentions in ``text``, each ``(canonical, type)`` once, in order of first
    appearance, at most ``max_mentions``. Emails, URLs and dates claim their characters
    first, so a name inside them ("Alice.Smith@x.com", "May 2023") is not also a name."""
    if max_mentions <= 0 or not text:
        return []
    found: list[tuple[int, str, str, EntityType]] = []  # (position, name, canonical, type)
    taken = bytearray(len(text))  # 1 where an email, URL, handle, tag or date was found

    # Each kind stops at max_mentions distinct keys: anything after that point has at
    # least max_mentions entities before it, so it cannot be in the result anyway.
    def claim(pattern: re.Pattern[str], kind: EntityType, clean=None, key=canonical) -> None:
        keys: set[str] = set()
        for match in pattern.finditer(text):
            start, end = match.span()
            if 1 in taken[start:end]:
                continue
            surface = clean(match[0]) if clean else match[0]
            taken[start:end] = b"\x01" * (end - start)
            found.append((start, surface, key(surface), kind))
            keys.add(found[-1][2])
            if len(keys) >= max_mentions:
                return

    if "://" in text or "www." in text or "WWW." in text:
        claim(_URL, EntityType.URL, clean=lambda url: url.rstrip(".,;:!?"))
    if "@" in text:
        claim(_EMAIL, EntityType.EMAIL)
        claim(_AT_HANDLE, EntityType.MENTION)
    if "#" in text:
        claim(_HASHTAG, EntityType.HASHTAG)
    if _DIGIT.search(text):
        claim(_DATE, EntityType.DATE, key=_date_canonical)
    names: set[str] = set()
    people: set[str] = set()  # keys the text addresses or relates to: persons throughout
    openers: list[tuple[int, str]] = []  # a sentence's first word, no cue: held back
    headings: dict[int, bool] = {}  # a line's start -> whether the line is a heading
    for match in _NAME_RUN.finditer(text):
        if 1 in taken[match.start() : match.end()]:
            continue
        run = match[0]
        for index, name in enumerate(_names_in_run(run)):
            at = match.start() + max(0, run.find(name))
            first = index == 0 and run.startswith(name) and _opens_sentence(text, match.start())
            kind = name_type(name)
            if first and " " in name and kind is EntityType.OTHER and _common_opener(name):
                # "Adding NYC", "Alright Sam": the opener is a word, the rest a name
                name = name.split(" ", 1)[1]
                at += run.find(name, len(run.split(" ", 1)[0]))
                first = False
                kind = name_type(name)
            model = _MODEL_NUMBER.match(text, at + len(name))
            if model and " " in name and kind in _PRODUCT_LIKE and at + len(name) == match.end():
                name += model[0]  # "Boss DS-1", "Ford F-150" (a brand's model; "COVID-19"
                # stays "COVID", what a question says)
            key = canonical(name)
            if first and " " not in name and _common_word(name):
                openers.append((at, name))  # "Customers asked": a word, whatever follows
                continue
            if kind is EntityType.OTHER and _person_cue(text, at, at + len(name)):
                kind = EntityType.PERSON
            elif kind is EntityType.OTHER and _place_cue(text, at):
                kind = EntityType.LOCATION
            if (
                kind is EntityType.OTHER
                and _common_capital(name, first)
                and not (first and _acts(name, text, at + len(name)))
            ):
                if first:  # a name after all if the text also uses it as one
                    openers.append((at, name))
                continue
            if kind is EntityType.OTHER and _heading(text, at, at + len(name), first, headings):
                continue  # "Bid Due Date:", "Allergies Appointment Current": a heading
            if kind in _ORG_LIKE and _org_cue(text, at, at + len(name), kind is EntityType.TOOL):
                kind = EntityType.ORGANIZATION  # "works at Brightline", "Facebook has faced"
            proper = [word for word in name.split() if word not in _JOINERS]
            if kind is EntityType.OTHER and _title_case_label(proper, text, at):
                continue  # "Benefits, Purpose, Target Audience": title-case text's words
            if kind is EntityType.OTHER and _label(name, text, at + len(name)):
                continue  # "Module 3", "Cat B", "Program Chair": a label or a role
            if kind is EntityType.OTHER and _in_code(text, at):
                continue  # "class RegistrationViewSet(...)": an identifier
            if kind in _PLACE_LIKE and _PLACE_NOUN_AFTER.match(text, at + len(name)):
                kind = EntityType.LOCATION  # "the Amazon rainforest", "the Hudson river"
            if kind is EntityType.PERSON:
                people.add(key)
            found.append((at, name, key, kind))
            names.add(key)
        if len(names) >= max_mentions:
            break
    kinds = {key: kind for _, _, key, kind in reversed(found)}  # each key's first type
    for start, name in openers:  # a name after all where the text also uses it as one
        if canonical(name) in names:
            found.append((start, name, canonical(name), kinds[canonical(name)]))
    found = [
        (at, name, key, EntityType.PERSON if key in people and kind is EntityType.OTHER else kind)
        for at, name, key, kind in found
    ]

    found.sort(key=lambda item: item[0])  # stable: names from one run keep their order
    seen: set[tuple[str, EntityType]] = set()
    mentions: list[Mention] = []
    for _, name, key, kind in found:
        if not key or (key, kind) in seen:
            continue
        seen.add((key, kind))
        mentions.append(Mention(name, key, kind))
        if len(mentions) >= max_mentions:
            break
    return mentions


def query_names(text: str, max_ngram: int = 3) -> list[str]:
    """Candidate canonical names for the entities of a query, for lookup in a table of
    known entities. Queries are often lowercase, so besides ``extract`` (whose keys come
    first) every 1..``max_ngram``-word gram within a clause is a candidate, unless all its
    words are stopwords. Deduplicated, extracted keys first, then grams in text order."""
    candidates = dict.fromkeys(mention.canonical for mention in extract(text))
    folded_text = unicodedata.normalize("NFC", text).casefold().replace("’", "'")
    for clause in _CLAUSE_BREAK.split(folded_text):
        # canonical() of a gram, word by word: a possessive is stripped from its last word,
        # and a gram led by a title would only repeat the gram without it.
        words = _TOKEN.findall(clause)
        bare = [w[:-2] if w.endswith("'s") and len(w) > 2 else w for w in words]
        stop = [w in _STOPWORDS for w in words]
        for start, first in enumerate(words):
            longest = 1 if first in _TITLES else max_ngram
            for end in range(start + 1, min(start + longest, len(words)) + 1):
                if not all(stop[start:end]):
                    candidates.setdefault(" ".join([*words[start : end - 1], bare[end - 1]]))
    return list(candidates)


def speaker_prefix(text: str) -> str | None:
    """The speaker of a transcript line, ``"Caroline"`` for ``"Caroline: hi"``: a leading
    run of at most three capitalised words followed by a colon; otherwise None."""
    match = _SPEAKER.match(text)
    return match[1] if match else None
