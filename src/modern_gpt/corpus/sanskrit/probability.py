"""Exact sentence probabilities under a Grammar (a parser summing over every derivation),
structured samples carrying them, and the Monte Carlo entropy rate of the corpus."""

from __future__ import annotations

import math
import random
import weakref
from collections import Counter, defaultdict
from typing import NamedTuple

from .lexicon import _check, _is_int
from .process import SENTENCE_END, Grammar, Word, _grammar, sentence_text

__all__ = ["Parser", "Sample", "entropy_per_char", "parser_for", "sample_sentence",
           "sentence_log_prob"]


class Sample(NamedTuple):
    """One sampled sentence with its structure and log-probabilities."""
    words: list[Word]  # in sentence order
    text: str  # the sentence, ending in " ।" (the corpus line adds "\n")
    derivation_log_prob: float  # log-prob of this one derivation, shuffle included
    log_prob: float  # exact marginal log-prob of ``text`` (= sentence_log_prob(text))


class Parser:
    """The exact marginal probability of a string under one Grammar's process."""

    def __init__(self, grammar: Grammar):
        _check(isinstance(grammar, Grammar), "grammar must be a Grammar")
        self.grammar = grammar
        self._build_tables()

    def _build_tables(self):
        """Per word form: the total probability of the choices that emit it in each role."""
        c, lex = self.grammar.choices, self.grammar.lexicon
        self._t_verb = defaultdict(list)  # form -> [(P(root), person, number, transitive)]
        for j, (_, transitive) in enumerate(lex.verbs):
            for (person, number), form in lex.verb_forms[j].items():
                self._t_verb[form].append((c.verb.prob(j), person, number, transitive))
        self._t_subj = defaultdict(lambda: defaultdict(float))  # form -> {(p, n): P(form|p,n)}
        self._t_obj, self._t_adj = defaultdict(float), defaultdict(float)
        for i, forms in enumerate(lex.noun_forms):
            p_i = c.noun.prob(i)
            for (case, n), form in forms.items():
                if case == "nom":
                    self._t_subj[form][3, n] += p_i
                if case == "acc":
                    self._t_obj[form] += c.object.prob(True) * p_i * c.number.prob(n)
                self._t_adj[form] += c.case.prob(case) * p_i * c.number.prob(n)
        for (person, n), form in lex.pronouns.items():
            self._t_subj[form][person, n] += c.drop.prob(False)
        self._t_part = defaultdict(float)
        for k, form in enumerate(lex.particle_forms):
            self._t_part[form] += c.particle.prob(True) * c.which.prob(k)

    def _adjuncts(self, rest: Counter) -> float:
        """P(the remaining words are exactly the adjuncts, in some order of drawing)."""
        r = sum(rest.values())
        # r! / prod(m!) distinct orders, each with the product of the adjuncts' probabilities
        prob = self.grammar.choices.count.prob(r) * math.factorial(r)
        for w, m in rest.items():
            prob *= self._t_adj.get(w, 0.0) ** m / math.factorial(m)
        return prob

    def _tail(self, rest: Counter) -> float:
        """P(remaining words = adjuncts + optional particle)."""
        total = self.grammar.choices.particle.prob(False) * self._adjuncts(rest)
        for w in rest:
            if self._t_part.get(w):
                total += self._t_part[w] * self._adjuncts(rest - Counter([w]))
        return total

    def _marginal(self, words: list[str]) -> float:
        """Sum over every assignment of the distinct words to the roles (verb; subject or
        a dropped one; object or none; then _tail) and over each word's analyses in its
        role, times the shuffle probability prod(m!)/k! of the observed order."""
        c = self.grammar.choices
        counts, total = Counter(words), 0.0
        for v in counts:
            rest1 = counts - Counter([v])
            for p_root, person, number, transitive in self._t_verb.get(v, ()):
                subjects = [(rest1, c.drop.prob(True))] if person != 3 else []
                for s in rest1:
                    p_s = self._t_subj.get(s, {}).get((person, number), 0.0)
                    if p_s:
                        subjects.append((rest1 - Counter([s]), p_s))
                for rest2, p_subj in subjects:
                    t = self._tail(rest2)
                    if transitive:
                        t *= c.object.prob(False)
                        t += sum(self._t_obj[o] * self._tail(rest2 - Counter([o]))
                                 for o in rest2 if self._t_obj.get(o))
                    total += c.subject.prob((person, number)) * p_root * p_subj * t
        shuffle = math.prod(math.factorial(m) for m in counts.values()) / math.factorial(len(words))
        return total * shuffle

    def log_prob(self, sentence: str) -> float:
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


_PARSERS: weakref.WeakKeyDictionary[Grammar, Parser] = weakref.WeakKeyDictionary()


def parser_for(grammar: Grammar | None = None) -> Parser:
    """The Parser of ``grammar`` (None: the default grammar), built once per grammar."""
    grammar = _grammar(grammar)
    if grammar not in _PARSERS:
        _PARSERS[grammar] = Parser(grammar)
    return _PARSERS[grammar]


def sentence_log_prob(sentence: str, grammar: Grammar | None = None) -> float:
    """Exact log-probability of one sentence line (summed over all its derivations)."""
    return parser_for(grammar).log_prob(sentence)


def sample_sentence(rng: random.Random, grammar: Grammar | None = None) -> Sample:
    """One structured sentence drawn with ``rng``, with its derivation and exact marginal
    log-probabilities."""
    p = parser_for(grammar)
    _check(isinstance(rng, random.Random), "rng must be a random.Random")
    words, dlogp = p.grammar.sample_words(rng)
    text = sentence_text(w.form for w in words)
    return Sample(words, text, dlogp, p.log_prob(text))


def entropy_per_char(n_sentences: int = 20000, seed: int = 0,
                     grammar: Grammar | None = None) -> tuple[float, float]:
    """(estimate, standard error) of the corpus entropy rate in nats per character (each
    line's "\\n" counted): mean(-log p) / mean(chars per line), by Monte Carlo over the
    very sentences ``generate(.., seed)`` writes, with a delta-method standard error."""
    p = parser_for(grammar)
    _check(_is_int(n_sentences) and n_sentences >= 2,
           f"n_sentences must be an int >= 2, got {n_sentences!r}")
    _check(_is_int(seed), f"seed must be an int, got {seed!r}")
    rng, nll, chars = random.Random(seed), [], []
    for _ in range(n_sentences):
        text = sentence_text(w.form for w in p.grammar.sample_words(rng)[0])
        nll.append(-p.log_prob(text))
        chars.append(len(text) + 1)
    n, mean_c = n_sentences, sum(chars) / n_sentences
    rate = sum(nll) / sum(chars)
    var = sum((a - rate * c) ** 2 for a, c in zip(nll, chars)) / (n - 1)
    return rate, math.sqrt(var / n) / mean_c
