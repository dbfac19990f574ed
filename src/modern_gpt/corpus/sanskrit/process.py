"""The generative process of one sentence, written once: the sampler (``generate``) and
the brute-force ``Grammar.exact_distribution`` both drive the same generator."""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections import defaultdict
from typing import NamedTuple

from .lexicon import ADJUNCT_CASES, DANDA, NUMBERS, PERSONS, PRONOUN_LEMMA, Lexicon, _check, _is_int

__all__ = ["DEFAULT_GRAMMAR", "DEFAULT_PROBS", "Choices", "Grammar", "Word", "generate",
           "sentence_text"]

DEFAULT_PROBS = dict(
    person_probs=(0.15, 0.15, 0.70),
    number_probs=(0.60, 0.15, 0.25),
    p_drop=0.25,
    p_object=0.8,
    adjunct_count_probs=(0.4, 0.4, 0.2),
    case_probs={"ins": 0.25, "dat": 0.10, "abl": 0.15, "gen": 0.25, "loc": 0.25},
    p_particle=0.3,
)

SENTENCE_END = " " + DANDA  # every sentence ends so; the corpus adds "\n" after it


def sentence_text(forms) -> str:
    """The sentence of these word forms: joined by single spaces, ending in " ।"."""
    return " ".join(forms) + SENTENCE_END


class Word(NamedTuple):
    """One word of a sampled sentence. lemma is the SLP1 stem (asmad/yuzmad for pronouns)."""
    role: str  # subject | verb | object | adjunct | particle
    form: str  # Devanagari
    lemma: str
    case: str | None = None
    person: int | None = None
    number: str | None = None


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
        """Total probability of ``value`` (0 if it cannot be chosen)."""
        return sum(p for v, p in zip(self.values, self.probs) if v == value)


class Choices(NamedTuple):
    """Every random choice of the process, in the order of the module docstring."""
    subject: _Choice  # (person, number)
    noun: _Choice  # index into lexicon.nouns, uniform
    verb: _Choice  # index into lexicon.verbs, uniform
    number: _Choice  # number of an object or adjunct
    drop: _Choice  # pro-drop of a 1st/2nd person subject
    object: _Choice  # a transitive verb takes an object
    count: _Choice  # number of adjuncts
    case: _Choice  # case of an adjunct
    particle: _Choice  # a particle is added
    which: _Choice  # index into lexicon.particles, uniform


class _Branch(Exception):
    """Raised by exact_distribution's replay at a choice its prefix has not fixed yet."""


def _probs(name: str, probs, size: int) -> list[float]:
    """Validate a distribution of ``size`` entries (any if 0) and return it normalised."""
    ok = (isinstance(probs, (tuple, list)) and (size == 0 or len(probs) == size)
          and len(probs) > 0 and all(isinstance(p, (int, float)) and p >= 0 for p in probs))
    _check(ok and abs(sum(probs) - 1) < 1e-9,
           f"{name} must be {size or 'some'} non-negative numbers summing to 1, got {probs!r}")
    return [p / sum(probs) for p in probs]


def _prob(name: str, p) -> float:
    """Validate one probability."""
    _check(isinstance(p, (int, float)) and 0 <= p <= 1, f"{name} must be in [0, 1], got {p!r}")
    return float(p)


class Grammar:
    """A Lexicon plus the probabilities of the process (see the package docstring).

    nouns, transitive, intransitive, particles: the word lists of ``Lexicon``.
    Defaults give the standard grammar; pass small lists for a tiny one.
    """

    def __init__(self, nouns=None, transitive=None, intransitive=None, particles=None, *,
                 person_probs=DEFAULT_PROBS["person_probs"],
                 number_probs=DEFAULT_PROBS["number_probs"],
                 p_drop=DEFAULT_PROBS["p_drop"], p_object=DEFAULT_PROBS["p_object"],
                 adjunct_count_probs=DEFAULT_PROBS["adjunct_count_probs"],
                 case_probs=None, p_particle=DEFAULT_PROBS["p_particle"]):
        self.lexicon = lex = Lexicon(nouns, transitive, intransitive, particles)
        pp = _probs("person_probs", person_probs, 3)
        pn = _probs("number_probs", number_probs, 3)
        pk = _probs("adjunct_count_probs", adjunct_count_probs, 0)
        case_probs = DEFAULT_PROBS["case_probs"] if case_probs is None else case_probs
        _check(isinstance(case_probs, dict) and set(case_probs) <= set(ADJUNCT_CASES),
               f"case_probs must be a dict over {ADJUNCT_CASES}, got {case_probs!r}")
        pc = _probs("case_probs", list(case_probs.values()), len(case_probs))
        p_drop, p_object = _prob("p_drop", p_drop), _prob("p_object", p_object)
        p_particle = _prob("p_particle", p_particle)
        _check(p_particle == 0 or lex.particles, "particles must be non-empty if p_particle > 0")

        uniform = lambda n: _Choice((i, 1 / n) for i in range(n))  # noqa: E731
        self.choices = Choices(
            subject=_Choice(((p, n), pp[i] * pn[j]) for i, p in enumerate(PERSONS)
                            for j, n in enumerate(NUMBERS)),
            noun=uniform(len(lex.nouns)),
            verb=uniform(len(lex.verbs)),
            number=_Choice(zip(NUMBERS, pn)),
            drop=_Choice([(True, p_drop), (False, 1 - p_drop)]),
            object=_Choice([(True, p_object), (False, 1 - p_object)]),
            count=_Choice(enumerate(pk)),
            case=_Choice(zip(case_probs, pc)),
            particle=_Choice([(True, p_particle), (False, 1 - p_particle)]),
            which=uniform(max(len(lex.particles), 1)),
        )

    def _process(self):
        """Yields _Choice objects, is sent the chosen value, returns the words in
        canonical order (subject, verb, object, adjuncts, particle) before the shuffle."""
        c, lex = self.choices, self.lexicon
        person, number = yield c.subject
        words = []
        if person == 3:
            i = yield c.noun
            words.append(Word("subject", lex.noun_forms[i]["nom", number], lex.nouns[i][0],
                              "nom", 3, number))
        elif not (yield c.drop):
            words.append(Word("subject", lex.pronouns[person, number],
                              PRONOUN_LEMMA[person], "nom", person, number))
        j = yield c.verb
        stem, transitive = lex.verbs[j]
        words.append(Word("verb", lex.verb_forms[j][person, number], stem, None, person,
                          number))
        if transitive and (yield c.object):
            i = yield c.noun
            n = yield c.number
            words.append(Word("object", lex.noun_forms[i]["acc", n], lex.nouns[i][0],
                              "acc", None, n))
        for _ in range((yield c.count)):
            case = yield c.case
            i = yield c.noun
            n = yield c.number
            words.append(Word("adjunct", lex.noun_forms[i][case, n], lex.nouns[i][0],
                              case, None, n))
        if (yield c.particle):
            k = yield c.which
            words.append(Word("particle", lex.particle_forms[k], lex.particles[k]))
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

    def sample_words(self, rng: random.Random) -> tuple[list[Word], float]:
        """One sentence's words in sentence order, and the log-prob of this derivation
        (shuffle included). Draws from ``rng`` exactly as ``generate`` does."""
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

    def generate(self, n_chars: int, seed: int) -> str:
        """Whole sentences, one per line, until at least n_chars characters (NFC)."""
        _check(_is_int(n_chars) and n_chars > 0, f"n_chars must be a positive int, got {n_chars!r}")
        _check(_is_int(seed), f"seed must be an int, got {seed!r}")
        rng, lines, total = random.Random(seed), [], 0
        while total < n_chars:
            line = sentence_text(w.form for w in self.sample_words(rng)[0]) + "\n"
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
                dist[sentence_text(perm)] += share
        return dict(dist)


DEFAULT_GRAMMAR = Grammar()


def _grammar(grammar: Grammar | None) -> Grammar:
    """The given Grammar, or the default one for None."""
    _check(grammar is None or isinstance(grammar, Grammar), "grammar must be a Grammar or None")
    return DEFAULT_GRAMMAR if grammar is None else grammar


def generate(n_chars: int, seed: int, grammar: Grammar | None = None) -> str:
    """Corpus text: whole sentences, one per line, until at least n_chars characters.
    Deterministic in ``seed`` (uses only random.Random(seed))."""
    return _grammar(grammar).generate(n_chars, seed)
