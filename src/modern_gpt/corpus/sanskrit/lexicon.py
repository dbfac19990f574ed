"""The grammar's words: the tables of Sanskrit forms (SLP1), SLP1 -> Devanagari, the
ṇatva rule, declension and conjugation, and a Lexicon of validated word lists."""

from __future__ import annotations

import itertools
import unicodedata

__all__ = [
    "ADJUNCT_CASES", "CASES", "DECLENSIONS", "INTRANSITIVE", "NOUNS", "NUMBERS", "PARTICLES",
    "PERSONS", "PRONOUNS", "PRONOUN_LEMMA", "TRANSITIVE", "VERB_ENDINGS", "Lexicon",
    "conjugate", "decline", "to_devanagari",
]

# ------------------------------------------------------------------ grammar tables (data)
CASES = ("nom", "acc", "ins", "dat", "abl", "gen", "loc")
NUMBERS = ("sg", "du", "pl")
PERSONS = (1, 2, 3)
ADJUNCT_CASES = ("ins", "dat", "abl", "gen", "loc")

# class: (final letter of the citation stem that the endings replace,
#         endings nom acc ins dat abl gen loc  | dual | plural), before the ṇatva rule.
DECLENSIONS = {
    "a_m": ("a", "aH am ena Aya At asya e | O O AByAm AByAm AByAm ayoH ayoH"
                 " | AH An EH eByaH eByaH AnAm ezu"),
    "a_n": ("a", "am am ena Aya At asya e | e e AByAm AByAm AByAm ayoH ayoH"
                 " | Ani Ani EH eByaH eByaH AnAm ezu"),
    "A_f": ("A", "A Am ayA AyE AyAH AyAH AyAm | e e AByAm AByAm AByAm ayoH ayoH"
                 " | AH AH ABiH AByaH AByaH AnAm Asu"),
    "I_f": ("I", "I Im yA yE yAH yAH yAm | yO yO IByAm IByAm IByAm yoH yoH"
                 " | yaH IH IBiH IByaH IByaH InAm Izu"),
    "i_m": ("i", "iH im inA aye eH eH O | I I iByAm iByAm iByAm yoH yoH"
                 " | ayaH In iBiH iByaH iByaH InAm izu"),
    "u_m": ("u", "uH um unA ave oH oH O | U U uByAm uByAm uByAm voH voH"
                 " | avaH Un uBiH uByaH uByaH UnAm uzu"),
}
NOUNS = {
    "a_m": "deva rAma nara vfkza aSva bAla putra Sizya gaja grAma mArga",
    "a_n": "vana Pala jala puzpa pustaka gfha nagara",
    "A_f": "sItA kanyA latA mAlA SAlA BAryA",
    "I_f": "nadI nArI devI",
    "i_m": "muni agni kavi fzi giri",
    "u_m": "guru SiSu sADu",
}
# Present stems (class 1, 4, 6 thematic). gam takes the accusative of the goal (vanaM gacCati).
TRANSITIVE = "gacCa paSya vada piba KAda liKa paWa naya smara icCa pfcCa rakza tyaja spfSa"
INTRANSITIVE = "Bava tizWa DAva jIva hasa pata nftya krIqa cara"
# parasmaipada endings replacing the stem-final a: (person, number) in order 3, 2, 1.
VERB_ENDINGS = "ati ataH anti | asi aTaH aTa | Ami AvaH AmaH"
PRONOUNS = {(1, "sg"): "aham", (1, "du"): "AvAm", (1, "pl"): "vayam",
            (2, "sg"): "tvam", (2, "du"): "yuvAm", (2, "pl"): "yUyam"}
PRONOUN_LEMMA = {1: "asmad", 2: "yuzmad"}
PARTICLES = "ca api eva na tatra atra sadA adya punaH SIGram iti"

DANDA = "\u0964"

# ------------------------------------------------------------------ SLP1 -> Devanagari
_VOWELS = dict(zip("aAiIuUfFxXeEoO", "अआइईउऊऋॠऌॡएऐओऔ"))
_SIGNS = dict(zip("aAiIuUfFxXeEoO", ["", *"ािीुूृॄॢॣेैोौ"]))
_CONSONANTS = dict(zip("kKgGNcCjJYwWqQRtTdDnpPbBmyrlvSzsh",
                       "कखगघङचछजझञटठडढणतथदधनपफबभमयरलवशषसह"))
_MARKS = {"M": "\u0902", "H": "\u0903", "~": "\u0901"}
_VIRAMA = "\u094D"


def _check(ok: bool, message: str) -> None:
    """Raise ValueError(message) unless ok."""
    if not ok:
        raise ValueError(message)


def _is_int(x) -> bool:
    """An int that is not a bool."""
    return isinstance(x, int) and not isinstance(x, bool)


def to_devanagari(translit: str) -> str:
    """SLP1 -> Devanagari (NFC for SLP1 input). A consonant not followed by a vowel gets a virama; M, H, ~
    are anusvara, visarga, candrabindu; "||" and "|" become ॥ and ।; anything else passes
    through unchanged."""
    _check(isinstance(translit, str), f"translit must be a str, got {type(translit).__name__}")
    text = translit.replace("||", "\u0965").replace("|", DANDA)
    out = []
    for i, ch in enumerate(text):
        if ch in _CONSONANTS:
            out.append(_CONSONANTS[ch])
            if text[i + 1:i + 2] not in _VOWELS:  # also true at the end ("")
                out.append(_VIRAMA)
        elif ch in _VOWELS:
            out.append(_SIGNS[ch] if i and text[i - 1] in _CONSONANTS else _VOWELS[ch])
        else:
            out.append(_MARKS.get(ch, ch))
    return "".join(out)


_NATVA_TRANSPARENT = set("aAiIuUfFxXeEoOkKgGNpPbBmhyvM")  # vowels, velars, labials, h y v, ṃ


def _natva(word: str) -> str:
    """n -> ṇ after r, ṛ, ṝ, ṣ in the same word when only vowels, velars, labials, h, y, v
    intervene and the n is followed by a vowel, m, y, v or n (Pāṇini 8.4.1-2)."""
    out, armed = [], False
    for i, ch in enumerate(word):
        if ch == "n" and armed and word[i + 1:i + 2] and word[i + 1] in "aAiIuUfFxXeEoOmyvn":
            ch = "R"
        out.append(ch)
        if ch in "rfFz":
            armed = True
        elif ch not in _NATVA_TRANSPARENT:
            armed = False
    return "".join(out)


def _decline_slp1(stem: str, cls: str) -> dict[tuple[str, str], str]:
    """The 21 SLP1 forms {(case, number): form} of a noun stem of class ``cls``."""
    _check(cls in DECLENSIONS, f"cls must be one of {sorted(DECLENSIONS)}, got {cls!r}")
    final, table = DECLENSIONS[cls]
    _check(isinstance(stem, str) and len(stem) > 1 and stem.endswith(final),
           f"stem must be an SLP1 {cls} stem ending in {final!r}, got {stem!r}")
    rows = [row.split() for row in table.split("|")]
    return {(case, num): _natva(stem[:-1] + rows[j][i])
            for j, num in enumerate(NUMBERS) for i, case in enumerate(CASES)}


def _conjugate_slp1(stem: str) -> dict[tuple[int, str], str]:
    """The 9 SLP1 present forms {(person, number): form} of a thematic stem."""
    _check(isinstance(stem, str) and len(stem) > 1 and stem.endswith("a"),
           f"stem must be an SLP1 thematic present stem ending in 'a', got {stem!r}")
    rows = [row.split() for row in VERB_ENDINGS.split("|")]
    return {(person, num): _natva(stem[:-1] + rows[3 - person][i])
            for person in PERSONS for i, num in enumerate(NUMBERS)}


def decline(stem: str, cls: str) -> dict[tuple[str, str], str]:
    """All 21 forms {(case, number): Devanagari} of an SLP1 noun stem of class ``cls``
    (one of DECLENSIONS: a_m, a_n, A_f, I_f, i_m, u_m), e.g. decline("deva", "a_m")."""
    return {k: to_devanagari(v) for k, v in _decline_slp1(stem, cls).items()}


def conjugate(stem: str) -> dict[tuple[int, str], str]:
    """The 9 present forms {(person, number): Devanagari} of an SLP1 thematic present
    stem, e.g. conjugate("gacCa")[(3, "pl")] == "गच्छन्ति"."""
    return {k: to_devanagari(v) for k, v in _conjugate_slp1(stem).items()}



# ------------------------------------------------------------------ the lexicon
def _words(x) -> list[str]:
    """A space-separated string or an iterable of words -> a list of words."""
    return x.split() if isinstance(x, str) else list(x)


class Lexicon:
    """The words of a grammar and all their Devanagari forms, validated.

    nouns: {class: stems}, stems an iterable or a space-separated SLP1 string;
    transitive / intransitive / particles: iterables or space-separated SLP1 strings.
    Defaults (None) give the standard word lists; pass small lists for a tiny lexicon.
    """

    def __init__(self, nouns=None, transitive=None, intransitive=None, particles=None):
        nouns = NOUNS if nouns is None else nouns
        _check(isinstance(nouns, dict), "nouns must be a dict {class: stems}")
        self.nouns = [(s, c) for c, stems in nouns.items() for s in _words(stems)]  # (stem, cls)
        self.verbs = ([(s, True) for s in _words(TRANSITIVE if transitive is None else transitive)]
                      + [(s, False) for s in
                         _words(INTRANSITIVE if intransitive is None else intransitive)])
        self.particles = _words(PARTICLES if particles is None else particles)
        _check(len(self.nouns) > 0, "nouns must hold at least one stem")
        _check(len(self.verbs) > 0, "transitive + intransitive must hold at least one verb")

        self.noun_forms = [decline(s, c) for s, c in self.nouns]  # [{(case, number): form}]
        self.verb_forms = [conjugate(s) for s, _ in self.verbs]  # [{(person, number): form}]
        self.pronouns = {k: to_devanagari(v) for k, v in PRONOUNS.items()}  # {(p, n): form}
        self.particle_forms = [to_devanagari(p) for p in self.particles]
        for form in itertools.chain(self.particle_forms, *(d.values() for d in self.noun_forms),
                                    *(d.values() for d in self.verb_forms)):
            _check(form != "" and " " not in form and "\n" not in form and
                   unicodedata.normalize("NFC", form) == form, f"bad word form {form!r}")
