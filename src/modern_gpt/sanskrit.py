"""A synthetic Sanskrit corpus with exact sentence probabilities.

No real Sanskrit text may enter this repository, so the experiments train on text drawn
from a small generative grammar of Sanskrit built from textbook facts of the language:

* nouns of six declension classes (masculine and neuter a-stems, feminine ā- and ī-stems,
  masculine i- and u-stems) in 7 cases x 3 numbers, with the n -> ṇ (ṇatva) rule;
* thematic present-tense verbs (classes 1, 4 and 6) with the parasmaipada endings for
  3 persons x 3 numbers, marked transitive or intransitive;
* the nominative personal pronouns of the 1st and 2nd person, and a few indeclinables.

The grammar is written in SLP1 (one ASCII letter per phoneme: A = ā, f = ṛ, R = ṇ, S = ś,
z = ṣ, M = ṃ, H = ḥ, aspirates as capitals: K = kh, C = ch, W = ṭh, B = bh ...) and
converted to NFC Devanagari on output.

The process that emits one sentence (one line of the corpus) is:

1. subject person and number: P(person) * P(number), independently;
2. person 3: the subject is a noun (uniform over stems) in the nominative of that number;
   person 1 or 2: the pronoun is dropped with probability ``p_drop`` (pro-drop; the verb
   ending alone carries the person), else it is aham/āvām/vayam or tvam/yuvām/yūyam;
3. a verb root (uniform), conjugated for the subject's person and number;
4. if the verb is transitive, with probability ``p_object`` an object: a noun (uniform) in
   the accusative, number drawn from P(number);
5. k adjuncts, k ~ ``adjunct_count_probs``; each an independent (case, noun, number) with
   case drawn from ``case_probs`` (instrumental, dative, ablative, genitive, locative);
6. with probability ``p_particle`` one indeclinable (uniform);
7. FREE WORD ORDER: the words are put in a uniformly random order (``random.shuffle``).

A sentence is the words joined by single spaces (no sandhi between words) followed by
" ।" (space, daṇḍa U+0964); the corpus holds ONE SENTENCE PER LINE, each line ending "\\n".

Exact probabilities. Many derivations give one string: syncretic forms (devau is nom. and
acc. dual, devebhyaḥ dat. and abl. plural, neuter nom. = acc., vane is loc. sg. and nom./acc.
dual), identical words in different roles, the two orders of two adjuncts, and every
reordering by the shuffle that leaves the string unchanged. ``sentence_log_prob`` parses
the string: it tries every assignment of its words to the roles (verb, subject or a dropped
subject, object or none, particle or none, and the rest as adjuncts), sums over all
analyses of each word in its role, and multiplies by the shuffle probability
prod(m_w!) / k! (m_w = multiplicity of word w among the k words). ``exact_distribution``
checks this by brute force on tiny grammars: it walks every derivation of the very same
process code the sampler runs, and every permutation.

Because sentences are independent and newline-terminated, the entropy rate of the corpus
is E[-log p(sentence)] / E[characters per line], a floor for any model's per-character
cross-entropy; ``entropy_per_char`` estimates it by Monte Carlo.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
import re
import unicodedata
from collections import Counter, defaultdict
from typing import NamedTuple

__all__ = [
    "CASES", "NUMBERS", "Grammar", "Sample", "Word", "aksharas", "conjugate", "decline",
    "entropy_per_char", "generate", "sample_sentence", "sentence_log_prob", "to_devanagari",
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

DEFAULT_PROBS = dict(
    person_probs=(0.15, 0.15, 0.70),
    number_probs=(0.60, 0.15, 0.25),
    p_drop=0.25,
    p_object=0.8,
    adjunct_count_probs=(0.4, 0.4, 0.2),
    case_probs={"ins": 0.25, "dat": 0.10, "abl": 0.15, "gen": 0.25, "loc": 0.25},
    p_particle=0.3,
)

DANDA = "\u0964"
SENTENCE_END = " " + DANDA  # every sentence ends so; the corpus adds "\n" after it

# ------------------------------------------------------------------ SLP1 -> Devanagari
_VOWELS = dict(zip("aAiIuUfFxXeEoO", "अआइईउऊऋॠऌॡएऐओऔ"))
_SIGNS = dict(zip("aAiIuUfFxXeEoO", ["", *"ािीुूृॄॢॣेैोौ"]))
_CONSONANTS = dict(zip("kKgGNcCjJYwWqQRtTdDnpPbBmyrlvSzsh",
                       "कखगघङचछजझञटठडढणतथदधनपफबभमयरलवशषसह"))
_MARKS = {"M": "\u0902", "H": "\u0903", "~": "\u0901"}
_VIRAMA = "\u094D"


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _is_int(x) -> bool:
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
    _check(cls in DECLENSIONS, f"cls must be one of {sorted(DECLENSIONS)}, got {cls!r}")
    final, table = DECLENSIONS[cls]
    _check(isinstance(stem, str) and len(stem) > 1 and stem.endswith(final),
           f"stem must be an SLP1 {cls} stem ending in {final!r}, got {stem!r}")
    rows = [row.split() for row in table.split("|")]
    return {(case, num): _natva(stem[:-1] + rows[j][i])
            for j, num in enumerate(NUMBERS) for i, case in enumerate(CASES)}


def _conjugate_slp1(stem: str) -> dict[tuple[int, str], str]:
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


# ------------------------------------------------------------------ the process
class Word(NamedTuple):
    """One word of a sampled sentence. lemma is the SLP1 stem (asmad/yuzmad for pronouns)."""
    role: str  # subject | verb | object | adjunct | particle
    form: str  # Devanagari
    lemma: str
    case: str | None = None
    person: int | None = None
    number: str | None = None


class Sample(NamedTuple):
    words: list[Word]  # in sentence order
    text: str  # the sentence, ending in " ।" (the corpus line adds "\n")
    derivation_log_prob: float  # log-prob of this one derivation, shuffle included
    log_prob: float  # exact marginal log-prob of ``text`` (= sentence_log_prob(text))


class _Choice:
    """One random choice of the process: values with probabilities (zeros dropped)."""
    __slots__ = ("values", "probs", "logps", "cum", "uniform")

    def __init__(self, pairs):
        pairs = [(v, p) for v, p in pairs if p > 0]
        self.values = tuple(v for v, _ in pairs)
        self.probs = tuple(p for _, p in pairs)
        self.logps = tuple(math.log(p) for p in self.probs)
        self.cum = tuple(itertools.accumulate(self.probs))
        self.uniform = len(set(self.probs)) == 1

    def prob(self, value) -> float:
        return sum(p for v, p in zip(self.values, self.probs) if v == value)


class _Branch(Exception):
    pass


def _probs(name: str, probs, size: int) -> list[float]:
    ok = (isinstance(probs, (tuple, list)) and (size == 0 or len(probs) == size)
          and len(probs) > 0 and all(isinstance(p, (int, float)) and p >= 0 for p in probs))
    _check(ok and abs(sum(probs) - 1) < 1e-9,
           f"{name} must be {size or 'some'} non-negative numbers summing to 1, got {probs!r}")
    return [p / sum(probs) for p in probs]


def _prob(name: str, p) -> float:
    _check(isinstance(p, (int, float)) and 0 <= p <= 1, f"{name} must be in [0, 1], got {p!r}")
    return float(p)


def _sentence(forms) -> str:
    return " ".join(forms) + SENTENCE_END


class Grammar:
    """A lexicon plus the probabilities of the process (see the module docstring).

    nouns: {class: stems}, stems an iterable or a space-separated SLP1 string;
    transitive / intransitive / particles: iterables or space-separated SLP1 strings.
    Defaults give the standard grammar; pass small lists for a tiny one.
    """

    def __init__(self, nouns=None, transitive=None, intransitive=None, particles=None, *,
                 person_probs=DEFAULT_PROBS["person_probs"],
                 number_probs=DEFAULT_PROBS["number_probs"],
                 p_drop=DEFAULT_PROBS["p_drop"], p_object=DEFAULT_PROBS["p_object"],
                 adjunct_count_probs=DEFAULT_PROBS["adjunct_count_probs"],
                 case_probs=None, p_particle=DEFAULT_PROBS["p_particle"]):
        split = lambda x: x.split() if isinstance(x, str) else list(x)  # noqa: E731
        nouns = NOUNS if nouns is None else nouns
        _check(isinstance(nouns, dict), "nouns must be a dict {class: stems}")
        self.nouns = [(s, c) for c, stems in nouns.items() for s in split(stems)]
        self.verbs = ([(s, True) for s in split(TRANSITIVE if transitive is None else transitive)]
                      + [(s, False) for s in
                         split(INTRANSITIVE if intransitive is None else intransitive)])
        self.particles = split(PARTICLES if particles is None else particles)
        _check(len(self.nouns) > 0, "nouns must hold at least one stem")
        _check(len(self.verbs) > 0, "transitive + intransitive must hold at least one verb")
        pp = _probs("person_probs", person_probs, 3)
        pn = _probs("number_probs", number_probs, 3)
        pk = _probs("adjunct_count_probs", adjunct_count_probs, 0)
        case_probs = DEFAULT_PROBS["case_probs"] if case_probs is None else case_probs
        _check(isinstance(case_probs, dict) and set(case_probs) <= set(ADJUNCT_CASES),
               f"case_probs must be a dict over {ADJUNCT_CASES}, got {case_probs!r}")
        pc = _probs("case_probs", list(case_probs.values()), len(case_probs))
        p_drop, p_object = _prob("p_drop", p_drop), _prob("p_object", p_object)
        p_particle = _prob("p_particle", p_particle)
        _check(p_particle == 0 or self.particles, "particles must be non-empty if p_particle > 0")

        self._noun_forms = [{k: to_devanagari(v) for k, v in _decline_slp1(s, c).items()}
                            for s, c in self.nouns]
        self._verb_forms = [conjugate(s) for s, _ in self.verbs]
        self._pronouns = {k: to_devanagari(v) for k, v in PRONOUNS.items()}
        self._particle_forms = [to_devanagari(p) for p in self.particles]
        for form in itertools.chain(self._particle_forms, *(d.values() for d in self._noun_forms)):
            _check(form != "" and " " not in form and "\n" not in form and
                   unicodedata.normalize("NFC", form) == form, f"bad word form {form!r}")

        uniform = lambda n: _Choice((i, 1 / n) for i in range(n))  # noqa: E731
        self._c_subject = _Choice(((p, n), pp[i] * pn[j]) for i, p in enumerate(PERSONS)
                                  for j, n in enumerate(NUMBERS))
        self._c_noun = uniform(len(self.nouns))
        self._c_verb = uniform(len(self.verbs))
        self._c_number = _Choice(zip(NUMBERS, pn))
        self._c_drop = _Choice([(True, p_drop), (False, 1 - p_drop)])
        self._c_object = _Choice([(True, p_object), (False, 1 - p_object)])
        self._c_count = _Choice(enumerate(pk))
        self._c_case = _Choice(zip(case_probs, pc))
        self._c_particle = _Choice([(True, p_particle), (False, 1 - p_particle)])
        self._c_which = uniform(max(len(self.particles), 1))
        self._build_parser_tables()

    # -- the process, written once; sampling and brute-force enumeration both drive it
    def _process(self):
        """Yields _Choice objects, is sent the chosen value, returns the words in
        canonical order (subject, verb, object, adjuncts, particle) before the shuffle."""
        person, number = yield self._c_subject
        words = []
        if person == 3:
            i = yield self._c_noun
            words.append(Word("subject", self._noun_forms[i]["nom", number], self.nouns[i][0],
                              "nom", 3, number))
        elif not (yield self._c_drop):
            words.append(Word("subject", self._pronouns[person, number],
                              PRONOUN_LEMMA[person], "nom", person, number))
        j = yield self._c_verb
        stem, transitive = self.verbs[j]
        words.append(Word("verb", self._verb_forms[j][person, number], stem, None, person,
                          number))
        if transitive and (yield self._c_object):
            i = yield self._c_noun
            n = yield self._c_number
            words.append(Word("object", self._noun_forms[i]["acc", n], self.nouns[i][0],
                              "acc", None, n))
        for _ in range((yield self._c_count)):
            case = yield self._c_case
            i = yield self._c_noun
            n = yield self._c_number
            words.append(Word("adjunct", self._noun_forms[i][case, n], self.nouns[i][0],
                              case, None, n))
        if (yield self._c_particle):
            k = yield self._c_which
            words.append(Word("particle", self._particle_forms[k], self.particles[k]))
        return words

    def _drive(self, pick):
        """Run the process with ``pick(choice) -> index``; return (words, log-prob)."""
        gen, logp = self._process(), 0.0
        choice = next(gen)
        try:
            while True:
                k = pick(choice)
                logp += choice.logps[k]
                choice = gen.send(choice.values[k])
        except StopIteration as stop:
            return stop.value, logp

    def _sample_words(self, rng: random.Random):
        def pick(c):
            n = len(c.values)
            if n == 1:
                return 0
            if c.uniform:
                return rng.randrange(n)
            return min(bisect.bisect_right(c.cum, rng.random() * c.cum[-1]), n - 1)

        words, logp = self._drive(pick)
        rng.shuffle(words)  # uniform over the k! orders
        return words, logp - math.lgamma(len(words) + 1)

    def sample(self, rng: random.Random) -> Sample:
        """One sentence with its structure, derivation log-prob and exact marginal log-prob."""
        _check(isinstance(rng, random.Random), "rng must be a random.Random")
        words, dlogp = self._sample_words(rng)
        text = _sentence(w.form for w in words)
        return Sample(words, text, dlogp, self.sentence_log_prob(text))

    def generate(self, n_chars: int, seed: int) -> str:
        """Whole sentences, one per line, until at least n_chars characters (NFC)."""
        _check(_is_int(n_chars) and n_chars > 0, f"n_chars must be a positive int, got {n_chars!r}")
        _check(_is_int(seed), f"seed must be an int, got {seed!r}")
        rng, lines, total = random.Random(seed), [], 0
        while total < n_chars:
            line = _sentence(w.form for w in self._sample_words(rng)[0]) + "\n"
            lines.append(line)
            total += len(line)
        return "".join(lines)

    def exact_distribution(self) -> dict[str, float]:
        """{sentence: probability} by brute force over every derivation of the process and
        every permutation (independent of the parser). Exponential: tiny grammars only."""
        dist, stack = defaultdict(float), [()]
        while stack:
            prefix = stack.pop()
            it = iter(prefix)

            def replay(c, it=it):
                k = next(it, None)
                if k is None:
                    raise _Branch(len(c.values))
                return k

            try:
                words, logp = self._drive(replay)
            except _Branch as branch:
                stack.extend(prefix + (k,) for k in range(branch.args[0]))
                continue
            share = math.exp(logp) / math.factorial(len(words))
            for perm in itertools.permutations(w.form for w in words):
                dist[_sentence(perm)] += share
        return dict(dist)

    # -- exact marginal probability of a string
    def _build_parser_tables(self):
        """Per word form: the total probability of the choices that emit it in each role."""
        self._t_verb = defaultdict(list)  # form -> [(P(root), person, number, transitive)]
        for j, (_, transitive) in enumerate(self.verbs):
            for (person, number), form in self._verb_forms[j].items():
                self._t_verb[form].append((self._c_verb.prob(j), person, number, transitive))
        self._t_subj = defaultdict(lambda: defaultdict(float))  # form -> {(p, n): P(form|p,n)}
        self._t_obj, self._t_adj = defaultdict(float), defaultdict(float)
        for i, forms in enumerate(self._noun_forms):
            p_i = self._c_noun.prob(i)
            for (case, n), form in forms.items():
                if case == "nom":
                    self._t_subj[form][3, n] += p_i
                if case == "acc":
                    self._t_obj[form] += self._c_object.prob(True) * p_i * self._c_number.prob(n)
                self._t_adj[form] += self._c_case.prob(case) * p_i * self._c_number.prob(n)
        for (person, n), form in self._pronouns.items():
            self._t_subj[form][person, n] += self._c_drop.prob(False)
        self._t_part = defaultdict(float)
        for k, form in enumerate(self._particle_forms):
            self._t_part[form] += self._c_particle.prob(True) * self._c_which.prob(k)

    def _adjuncts(self, rest: Counter) -> float:
        """P(the remaining words are exactly the adjuncts, in some order of drawing)."""
        r = sum(rest.values())
        prob = self._c_count.prob(r) * math.factorial(r)  # distinct orders: r!/prod(m!)
        for w, m in rest.items():
            prob *= self._t_adj.get(w, 0.0) ** m / math.factorial(m)
        return prob

    def _tail(self, rest: Counter) -> float:
        """P(remaining words = adjuncts + optional particle)."""
        total = self._c_particle.prob(False) * self._adjuncts(rest)
        for w in rest:
            if self._t_part.get(w):
                total += self._t_part[w] * self._adjuncts(rest - Counter([w]))
        return total

    def _marginal(self, words: list[str]) -> float:
        """Sum over every assignment of the distinct words to the roles (verb; subject or
        a dropped one; object or none; then _tail) and over each word's analyses in its
        role, times the shuffle probability prod(m!)/k! of the observed order."""
        counts, total = Counter(words), 0.0
        for v in counts:
            rest1 = counts - Counter([v])
            for p_root, person, number, transitive in self._t_verb.get(v, ()):
                subjects = [(rest1, self._c_drop.prob(True))] if person != 3 else []
                for s in rest1:
                    p_s = self._t_subj.get(s, {}).get((person, number), 0.0)
                    if p_s:
                        subjects.append((rest1 - Counter([s]), p_s))
                for rest2, p_subj in subjects:
                    t = self._tail(rest2)
                    if transitive:
                        t *= self._c_object.prob(False)
                        t += sum(self._t_obj[o] * self._tail(rest2 - Counter([o]))
                                 for o in rest2 if self._t_obj.get(o))
                    total += self._c_subject.prob((person, number)) * p_root * p_subj * t
        shuffle = math.prod(math.factorial(m) for m in counts.values()) / math.factorial(len(words))
        return total * shuffle

    def sentence_log_prob(self, sentence: str) -> float:
        """Exact natural-log probability that the process emits ``sentence`` (one line,
        ending in " ।", an optional trailing newline allowed); -inf if it cannot."""
        _check(isinstance(sentence, str), f"sentence must be a str, got {type(sentence).__name__}")
        line = sentence[:-1] if sentence.endswith("\n") else sentence
        _check("\n" not in line, "sentence must be a single line (one sentence)")
        if not line.endswith(SENTENCE_END):
            return -math.inf
        words = line[:-len(SENTENCE_END)].split(" ")
        if "" in words:
            return -math.inf
        p = self._marginal(words)
        return math.log(p) if p > 0 else -math.inf

    def entropy_per_char(self, n_sentences: int = 20000, seed: int = 0) -> tuple[float, float]:
        """Monte Carlo entropy rate in nats per character of the corpus (each line's "\\n"
        counted): mean(-log p) / mean(chars per line), with its delta-method standard error."""
        _check(_is_int(n_sentences) and n_sentences >= 2,
               f"n_sentences must be an int >= 2, got {n_sentences!r}")
        _check(_is_int(seed), f"seed must be an int, got {seed!r}")
        rng, nll, chars = random.Random(seed), [], []
        for _ in range(n_sentences):
            text = _sentence(w.form for w in self._sample_words(rng)[0])
            nll.append(-self.sentence_log_prob(text))
            chars.append(len(text) + 1)
        n, mean_c = n_sentences, sum(chars) / n_sentences
        rate = sum(nll) / sum(chars)
        var = sum((a - rate * c) ** 2 for a, c in zip(nll, chars)) / (n - 1)
        return rate, math.sqrt(var / n) / mean_c


DEFAULT_GRAMMAR = Grammar()


def _grammar(grammar):
    _check(grammar is None or isinstance(grammar, Grammar), "grammar must be a Grammar or None")
    return DEFAULT_GRAMMAR if grammar is None else grammar


def generate(n_chars: int, seed: int, grammar: Grammar | None = None) -> str:
    """Corpus text: whole sentences, one per line, until at least n_chars characters.
    Deterministic in ``seed`` (uses only random.Random(seed))."""
    return _grammar(grammar).generate(n_chars, seed)


def sample_sentence(rng: random.Random, grammar: Grammar | None = None) -> Sample:
    """One structured sentence drawn with ``rng``."""
    return _grammar(grammar).sample(rng)


def sentence_log_prob(sentence: str, grammar: Grammar | None = None) -> float:
    """Exact log-probability of one sentence line (summed over all its derivations)."""
    return _grammar(grammar).sentence_log_prob(sentence)


def entropy_per_char(n_sentences: int = 20000, seed: int = 0,
                     grammar: Grammar | None = None) -> tuple[float, float]:
    """(estimate, standard error) of the corpus entropy rate in nats per character."""
    return _grammar(grammar).entropy_per_char(n_sentences, seed)


# ------------------------------------------------------------------ akṣara segmentation
_CONS = "[\u0915-\u0939\u0958-\u095F\u0978-\u097F]\u093C?"  # consonant (+ nukta)
_HAL = f"{_CONS}\u094D[\u200C\u200D]?"  # consonant + virama (+ ZWNJ/ZWJ)
_VSIGN = "[\u093A\u093B\u093E-\u094C\u094E\u094F\u0955-\u0957\u0962\u0963]"
_MOD = "[\u0900-\u0903\u0951-\u0954]*"  # candrabindu, anusvara, visarga, accents
_IND = "[\u0904-\u0914\u0960\u0961\u0972-\u0977]"
_AKSHARA = re.compile(
    f"(?P<live>(?:{_HAL})*{_CONS}(?!\u094D){_VSIGN}?{_MOD}|{_IND}{_MOD})"
    f"|(?P<dead>(?:{_HAL})+{_MOD})|.", re.DOTALL)


def aksharas(text: str) -> list[str]:
    """Split text into Devanagari orthographic syllables: (consonant+virama)* consonant
    [vowel sign], or an independent vowel, each with any anusvara/visarga/candrabindu; a
    cluster ending in virama (word-final consonant) joins the preceding syllable. Every
    other character is its own token, so "".join(aksharas(t)) == t for any string."""
    _check(isinstance(text, str), f"text must be a str, got {type(text).__name__}")
    out: list[str] = []
    prev_syllable = False
    for m in _AKSHARA.finditer(text):
        if m.lastgroup == "dead" and prev_syllable:
            out[-1] += m.group()
        else:
            out.append(m.group())
        prev_syllable = m.lastgroup is not None
    return out
