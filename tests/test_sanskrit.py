"""Tests of the synthetic Sanskrit corpus generator (modern_gpt.corpus.sanskrit) and of the
akṣara segmentation (modern_gpt.corpus.akshara)."""

import ast
import math
import random
import unicodedata
from collections import Counter

import pytest

from modern_gpt.corpus import akshara
from modern_gpt.corpus import sanskrit as S
from modern_gpt.corpus.akshara import aksharas
from modern_gpt.corpus.sanskrit import lexicon, probability, process


# Two tiny grammars whose every sentence can be enumerated. Between them they exercise
# pro-drop, both pronoun persons, transitive and intransitive verbs, particles, two ordered
# adjuncts, repeated words, and syncretism (devau nom=acc du; vane nom/acc du = loc sg;
# devebhyaH dat=abl pl; vanam/vanAni nom=acc).
def tiny_a():
    return S.Grammar({"a_m": "deva", "a_n": "vana"}, "paSya", "Bava", "",
                     person_probs=(0.3, 0, 0.7), number_probs=(0.5, 0.5, 0), p_drop=0.5,
                     p_object=0.5, adjunct_count_probs=(0.5, 0.3, 0.2),
                     case_probs={"loc": 1.0}, p_particle=0)


def tiny_b():
    return S.Grammar({"a_m": "deva", "a_n": "vana"}, "paSya", "Bava", "ca",
                     person_probs=(0, 0.4, 0.6), number_probs=(0.5, 0, 0.5), p_drop=0.3,
                     p_object=0.6, adjunct_count_probs=(0.6, 0.4),
                     case_probs={"dat": 0.5, "abl": 0.5}, p_particle=0.5)


@pytest.fixture(scope="module")
def tiny_dists():
    return [(g, g.exact_distribution()) for g in (tiny_a(), tiny_b())]


def test_generate_deterministic_per_seed_and_differs_across_seeds():
    a, b, c = S.generate(5000, 1), S.generate(5000, 1), S.generate(5000, 2)
    assert a == b
    assert a != c
    assert len(a) >= 5000
    assert len(a) - len(a.splitlines(keepends=True)[-1]) < 5000  # stops after n_chars


def test_output_is_nfc_devanagari_one_sentence_per_line():
    text = S.generate(50_000, 3)
    assert unicodedata.normalize("NFC", text) == text
    assert all(ch in " \n" or "\u0900" <= ch <= "\u097F" for ch in text)
    assert not any("\u0966" <= ch <= "\u096F" for ch in text)  # no digits
    assert text.endswith(" ।\n")
    for line in text.splitlines():
        assert line.endswith(" ।") and line.count("।") == 1
        assert "  " not in line and not line.startswith(" ")


def test_hand_checked_forms():
    deva, rama = S.decline("deva", "a_m"), S.decline("rAma", "a_m")
    assert [deva[c, "sg"] for c in S.CASES] == [
        "देवः", "देवम्", "देवेन", "देवाय", "देवात्", "देवस्य", "देवे"]
    assert [deva[c, "du"] for c in S.CASES] == [
        "देवौ", "देवौ", "देवाभ्याम्", "देवाभ्याम्", "देवाभ्याम्", "देवयोः", "देवयोः"]
    assert [deva[c, "pl"] for c in S.CASES] == [
        "देवाः", "देवान्", "देवैः", "देवेभ्यः", "देवेभ्यः", "देवानाम्", "देवेषु"]
    assert rama["ins", "sg"] == "रामेण" and rama["gen", "pl"] == "रामाणाम्"
    assert S.decline("nara", "a_m")["gen", "pl"] == "नराणाम्"
    assert S.decline("nara", "a_m")["acc", "pl"] == "नरान्"  # final n stays dental
    assert S.decline("vfkza", "a_m")["loc", "pl"] == "वृक्षेषु"
    assert S.decline("kanyA", "A_f")["ins", "pl"] == "कन्याभिः"
    assert S.decline("sItA", "A_f")["dat", "sg"] == "सीतायै"
    assert S.decline("vana", "a_n")["nom", "pl"] == "वनानि"
    assert S.decline("puzpa", "a_n")["acc", "pl"] == "पुष्पाणि"
    assert S.decline("muni", "i_m")["ins", "sg"] == "मुनिना"
    assert S.decline("agni", "i_m")["loc", "sg"] == "अग्नौ"
    assert S.decline("giri", "i_m")["ins", "sg"] == "गिरिणा"
    assert S.decline("muni", "i_m")["acc", "pl"] == "मुनीन्"
    assert S.decline("nadI", "I_f")["abl", "sg"] == "नद्याः"
    assert S.decline("nArI", "I_f")["gen", "pl"] == "नारीणाम्"
    assert S.decline("guru", "u_m")["ins", "sg"] == "गुरुणा"
    assert S.decline("guru", "u_m")["gen", "du"] == "गुर्वोः"
    assert S.conjugate("gacCa")[3, "pl"] == "गच्छन्ति"
    assert S.conjugate("paSya")[1, "sg"] == "पश्यामि"
    assert S.conjugate("smara")[3, "pl"] == "स्मरन्ति"  # no ṇ before t
    assert [S.conjugate("vada")[2, n] for n in S.NUMBERS] == ["वदसि", "वदथः", "वदथ"]
    assert S.to_devanagari("aham tvam yUyam |") == "अहम् त्वम् यूयम् ।"
    assert S.to_devanagari("kfzRa SrI iti") == "कृष्ण श्री इति"


VERB_SUFFIX = {(3, "sg"): "ति", (3, "du"): "तः", (3, "pl"): "न्ति", (2, "sg"): "सि",
               (2, "du"): "थः", (2, "pl"): "थ", (1, "sg"): "ामि", (1, "du"): "ावः",
               (1, "pl"): "ामः"}
PRONOUN = {"अहम्": (1, "sg"), "आवाम्": (1, "du"), "वयम्": (1, "pl"), "त्वम्": (2, "sg"),
           "युवाम्": (2, "du"), "यूयम्": (2, "pl")}


def test_subject_verb_agreement_and_transitivity():
    rng, g = random.Random(5), process.DEFAULT_GRAMMAR
    classes = dict(g.lexicon.nouns)
    transitive = {stem for stem, t in g.lexicon.verbs if t}
    seen_persons = set()
    for _ in range(1000):
        s = S.sample_sentence(rng)
        assert s.text == " ".join(w.form for w in s.words) + " ।"
        roles = Counter(w.role for w in s.words)
        assert roles["verb"] == 1 and roles["subject"] <= 1 and roles["object"] <= 1
        verb = next(w for w in s.words if w.role == "verb")
        assert verb.form.endswith(VERB_SUFFIX[verb.person, verb.number])
        assert verb.form == S.conjugate(verb.lemma)[verb.person, verb.number]
        seen_persons.add(verb.person)
        subject = [w for w in s.words if w.role == "subject"]
        if verb.person == 3:
            (subj,) = subject
            assert subj.form == S.decline(subj.lemma, classes[subj.lemma])["nom", verb.number]
        for subj in subject:
            assert (subj.person, subj.number) == (verb.person, verb.number)
            if subj.person != 3:
                assert PRONOUN[subj.form] == (verb.person, verb.number)
        if roles["object"]:
            assert verb.lemma in transitive
            obj = next(w for w in s.words if w.role == "object")
            assert obj.form == S.decline(obj.lemma, classes[obj.lemma])["acc", obj.number]
    assert seen_persons == {1, 2, 3}


def test_word_order_is_free():
    rng = random.Random(7)
    positions, three_word = Counter(), Counter()
    for _ in range(3000):
        words = S.sample_sentence(rng).words
        i = next(k for k, w in enumerate(words) if w.role == "verb")
        positions[i] += 1
        if len(words) == 3:
            three_word[i] += 1
    assert len(positions) >= 5
    n = sum(three_word.values())
    assert n > 300 and all(abs(three_word[i] / n - 1 / 3) < 0.07 for i in range(3))


def test_exact_log_prob_normalises_on_tiny_grammars(tiny_dists):
    for g, dist in tiny_dists:
        assert len(dist) > 10_000
        assert abs(sum(dist.values()) - 1) < 1e-9  # brute force covers the whole process
        total = 0.0
        for sentence, p in dist.items():
            lp = S.sentence_log_prob(sentence, g)
            assert abs(lp - math.log(p)) < 1e-9, sentence
            total += math.exp(lp)
        assert abs(total - 1) < 1e-9


def test_hand_computed_probabilities():
    g = tiny_a()
    # vane: subject (nom du) + adjunct (loc sg); 2!/3! orders keep the string
    assert math.isclose(math.exp(S.sentence_log_prob("वने वने भवतः ।", g)),
                        0.35 * 0.5 * 0.5 * (0.3 * 0.25) / 3)
    # with a transitive verb the second vane is also an object (acc du): two derivations
    t = 0.5 * (0.3 * 0.25) + 0.5 * 0.25 * 0.5
    assert math.isclose(math.exp(S.sentence_log_prob("वने वने पश्यतः ।\n", g)),
                        0.35 * 0.5 * 0.5 * t / 3)
    assert math.isclose(math.exp(S.sentence_log_prob("पश्यामि ।", g)), 0.15 * 0.5 * 0.5 * 0.25)
    assert math.isclose(math.exp(S.sentence_log_prob("पश्यामि अहम् ।", g)),
                        0.15 * 0.5 * 0.5 * 0.25 / 2)
    for impossible in ["वने पश्यति ।", "पश्यामि", "पश्यामि  ।", "abc ।", "देवः पश्यति ।"[::-1]]:
        assert S.sentence_log_prob(impossible, g) == -math.inf
    with pytest.raises(ValueError, match="single line"):
        S.sentence_log_prob("पश्यामि ।\nपश्यामि ।\n", g)


def test_sampler_reports_the_marginal(tiny_dists):
    for g, dist in tiny_dists:
        rng, counts, n = random.Random(11), Counter(), 20_000
        strictly_above = 0
        for i in range(n):
            s = S.sample_sentence(rng, g)
            counts[s.text] += 1
            if i < 500:
                assert s.log_prob == S.sentence_log_prob(s.text, g)
                assert abs(s.log_prob - math.log(dist[s.text])) < 1e-9
                assert s.log_prob >= s.derivation_log_prob - 1e-12
                strictly_above += s.log_prob > s.derivation_log_prob + 1e-6
        assert strictly_above > 100  # per-derivation log-probs would not pass
        for sentence, p in sorted(dist.items(), key=lambda kv: -kv[1])[:8]:
            assert abs(counts[sentence] / n - p) < 5 * math.sqrt(p * (1 - p) / n)
    # the default grammar too, against the parser
    s = S.sample_sentence(random.Random(0))
    assert s.log_prob == S.sentence_log_prob(s.text) > -math.inf


def test_entropy_estimate(tiny_dists):
    h, se = S.entropy_per_char(3000, seed=1)
    assert math.isfinite(h) and 0.3 < h < 2.0 and 0 < se < 0.02
    g, dist = tiny_dists[1]
    exact = (-sum(p * math.log(p) for p in dist.values())
             / sum(p * (len(s) + 1) for s, p in dist.items()))
    est, se = S.entropy_per_char(4000, seed=2, grammar=g)
    assert abs(est - exact) < 4 * se and se < 0.03 * exact


def test_entropy_counts_characters_like_the_corpus():
    # entropy_per_char(m, seed) draws the same m sentences as generate(.., seed) writes, so
    # its ratio must equal total -log p over the exact character count of the corpus text.
    text = S.generate(20_000, 9)
    lines = text.splitlines(keepends=True)
    nll = sum(-S.sentence_log_prob(line) for line in lines)
    h, _ = S.entropy_per_char(len(lines), seed=9)
    assert math.isclose(h, nll / len(text), rel_tol=1e-12)


def _sibling_imports(module) -> set[str]:
    """The modules of this package (relative imports) that ``module``'s source imports."""
    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    return {node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level > 0}


def test_lexicon_process_and_probability_work_on_their_own():
    # layering: lexicon <- process <- probability; the akshara tokenizer needs no grammar
    assert _sibling_imports(lexicon) == set()
    assert _sibling_imports(process) == {"lexicon"}
    assert _sibling_imports(probability) == {"lexicon", "process"}
    assert _sibling_imports(akshara) == set()
    assert {n.names[0].name for n in ast.walk(ast.parse(open(akshara.__file__).read()))
            if isinstance(n, ast.Import)} == {"re"}
    # lexicon: word lists -> validated Devanagari forms, no probabilities
    lex = lexicon.Lexicon({"a_m": "deva", "a_n": "vana"}, "paSya", "Bava", "ca")
    assert lex.nouns == [("deva", "a_m"), ("vana", "a_n")]
    assert lex.verbs == [("paSya", True), ("Bava", False)]
    assert lex.noun_forms == [lexicon.decline("deva", "a_m"), lexicon.decline("vana", "a_n")]
    assert lex.verb_forms[1] == lexicon.conjugate("Bava") and lex.particle_forms == ["च"]
    assert lex.pronouns[1, "sg"] == "अहम्" and lex.pronouns[2, "pl"] == "यूयम्"
    # process: a Grammar samples and enumerates, and holds no parser or entropy estimator
    g = tiny_b()
    assert isinstance(g.lexicon, lexicon.Lexicon) and g.lexicon.nouns == lex.nouns
    assert not any(hasattr(g, a) for a in ("sentence_log_prob", "entropy_per_char", "sample"))
    dist = g.exact_distribution()
    assert abs(sum(dist.values()) - 1) < 1e-9
    words, dlogp = g.sample_words(random.Random(1))
    assert process.sentence_text(w.form for w in words) in dist
    assert dlogp <= math.log(dist[process.sentence_text(w.form for w in words)]) + 1e-12
    assert g.generate(300, 5) == S.generate(300, 5, g) == process.generate(300, 5, grammar=g)
    # probability: a Parser built from the Grammar alone gives the brute-force marginals
    parser = probability.Parser(g)
    assert parser.grammar is g and probability.parser_for(g) is probability.parser_for(g)
    total = 0.0
    for sentence, p in dist.items():
        lp = parser.log_prob(sentence)
        assert abs(lp - math.log(p)) < 1e-9 and lp == probability.sentence_log_prob(sentence, g)
        total += math.exp(lp)
    assert abs(total - 1) < 1e-9
    assert parser.log_prob("च ।") == -math.inf


def test_aksharas_examples():
    assert aksharas("देवान्") == ["दे", "वान्"]
    assert aksharas("गच्छन्ति") == ["ग", "च्छ", "न्ति"]
    assert aksharas("कन्याभिः") == ["क", "न्या", "भिः"]
    assert aksharas("अहम् वृक्षेषु ।\n") == ["अ", "हम्", " ", "वृ", "क्षे", "षु", " ", "।", "\n"]
    assert aksharas("अंग्रेज़ी") == ["अं", "ग्रे", "ज़ी"]  # nukta stays with its consonant
    assert aksharas("हँस a1") == ["हँ", "स", " ", "a", "1"]
    assert aksharas("क्") == ["क्"] and aksharas("") == []


def test_aksharas_round_trips_any_string():
    rng = random.Random(3)
    pools = [range(0x0900, 0x0980), range(0x20, 0x7F), [0x200C, 0x200D, 0x0A, 0x0301],
             range(0x0980, 0x0A00)]
    for _ in range(2000):
        n = rng.randrange(0, 30)
        t = "".join(chr(rng.choice(rng.choice(pools))) for _ in range(n))
        assert "".join(aksharas(t)) == t
    for _ in range(200):
        t = "".join(chr(rng.randrange(0, 0x110000)) for _ in range(rng.randrange(20)))
        assert "".join(aksharas(t)) == t
    text = S.generate(20_000, 4)
    tokens = aksharas(text)
    assert "".join(tokens) == text
    for tok in tokens:  # every syllable starts with a consonant or an independent vowel
        assert len(tok) == 1 or "\u0904" <= tok[0] <= "\u0939"


@pytest.mark.parametrize("call", [
    lambda: S.generate(0, 1), lambda: S.generate(-5, 1), lambda: S.generate(1.5, 1),
    lambda: S.generate(True, 1), lambda: S.generate(10, "x"),
    lambda: S.entropy_per_char(1), lambda: S.sentence_log_prob(5),
    lambda: S.to_devanagari(None), lambda: aksharas(b"x"),
    lambda: S.sample_sentence("x"), lambda: S.sentence_log_prob("x ।", grammar="g"),
    lambda: S.decline("deva", "x_q"), lambda: S.decline("deva", "A_f"),
    lambda: S.conjugate("gam"),
    lambda: S.Grammar(number_probs=(0.5, 0.5, 0.5)), lambda: S.Grammar(p_object=1.5),
    lambda: S.Grammar(case_probs={"nom": 1.0}), lambda: S.Grammar(nouns={}),
    lambda: S.Grammar(particles="", p_particle=0.5),
    lambda: lexicon.Lexicon(nouns={}), lambda: lexicon.Lexicon(nouns="deva"),
    lambda: lexicon.Lexicon(transitive="", intransitive=""),
    lambda: lexicon.Lexicon(particles=["ca", "a b"]), lambda: probability.Parser(None),
])
def test_bad_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()
