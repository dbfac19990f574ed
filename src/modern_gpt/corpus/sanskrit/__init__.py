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

Layout: ``lexicon`` (the tables, SLP1 -> Devanagari, ``decline``, ``conjugate``, the
``Lexicon`` of word lists), ``process`` (the ``Grammar``: a Lexicon plus the probabilities,
the process generator, the sampler, ``generate`` and ``exact_distribution``) and
``probability`` (the parser behind ``sentence_log_prob``, ``sample_sentence`` and
``entropy_per_char``). The module-level functions take ``grammar=None`` for the default
grammar. Akṣara segmentation lives in ``modern_gpt.corpus.akshara``.
"""

from __future__ import annotations

from .lexicon import CASES, NUMBERS, conjugate, decline, to_devanagari
from .probability import Sample, entropy_per_char, sample_sentence, sentence_log_prob
from .process import Grammar, Word, generate

__all__ = [
    "CASES", "NUMBERS", "Grammar", "Sample", "Word", "conjugate", "decline",
    "entropy_per_char", "generate", "sample_sentence", "sentence_log_prob", "to_devanagari",
]
