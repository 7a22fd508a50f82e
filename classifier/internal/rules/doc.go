// Package rules is the topic rule engine of the classifier: keyword rules in,
// scored topic matches out. It is pure computation (no I/O, no database) and
// safe for concurrent use.
//
// # Matching semantics
//
// Text and keywords go through the same Normalize, and a keyword matches only
// as a whole word or a whole phrase of the normalized text: "gun" does not
// match "begun", "rob" does not match "problem". The decisions behind
// Normalize:
//
//   - Case is folded with unicode.ToLower after NFKD decomposition, so
//     compatibility forms (ligatures, full-width letters) fold too.
//   - Accents are removed: NFKD decomposition followed by dropping nonspacing
//     marks (Mn), so "café" matches "cafe" and "Montréal" matches "montreal".
//     Letters that do not decompose ("ø", "ł", "ß", "æ") are kept as they are.
//     Spacing marks (Mc) are kept inside words so that Indic scripts are not
//     split apart.
//   - Every rune that is not a letter, a decimal digit or a kept mark is a
//     word boundary, and a run of boundaries is one space. Hyphens are
//     boundaries: the keyword "break-in" normalizes to "break in" and matches
//     "break-in", "break in" and "break—in", but not "breakin". Apostrophes
//     (' ’ ʼ) are boundaries too: "O'Brien" is the phrase "o brien", and the
//     keyword "city" matches "the city's mayor".
//   - Invisible format characters that occur inside words in scraped text
//     (soft hyphen U+00AD, ZWNJ, ZWJ, word joiner, BOM) are deleted, not
//     turned into boundaries. Invalid UTF-8 bytes are boundaries.
//   - Scripts written without spaces (Chinese, Japanese, Thai) only match
//     where the text itself has boundaries: whole-word matching cannot see
//     inside them. That is a known limit.
//
// A multi-word keyword matches across any run of whitespace and punctuation
// ("drug trafficking" matches "drug-trafficking" and "drug, trafficking"),
// but never across the title/body boundary of Engine.Match.
//
// # Stemming
//
// With Options.Stemming (on in NewEngine, StemmingDefault), every token of
// the normalized keywords and text is replaced by its English Snowball
// (Porter2) stem (Stem, github.com/kljensen/snowball) before matching, so
// "acquire" matches "acquires", "acquired" and "acquiring", and "oil price"
// matches "oil prices". Whole-word semantics are unchanged: tokens are
// compared whole after stemming, so "gun" still does not match "begun" and a
// phrase still does not span the title and body. Keywords of one rule that
// share a stem ("murder", "murdered") are one keyword: they count once and
// do not dilute coverage. Stemming conflates some words ("shooting" and
// "shoot", "judges" and "judge"); the default rules ask for two distinct
// keywords, which keeps such single words from deciding a topic. Every
// matcher stems alike and gives the same results. Stems are memoized (up to
// 100,000 distinct tokens).
//
// # Scoring
//
// The score is the spec's formula (architecture.md 3.4):
//
//	logTF    = min(1, log1p(hits) / 2.5)
//	coverage = uniqueMatches / keywords
//	score    = 0.5*logTF + 0.5*coverage
//
// (Score) with hits = the number of distinct keywords of the rule found in the text,
// which is also uniqueMatches. It is not a term frequency: cloudflare's
// thread-safe Aho-Corasick call reports each pattern once per text, so every
// matcher here reports presence, not counts, and all three agree exactly.
// The effect is that repeating one keyword ("hockey" ten times) does not
// raise a rule's score; finding more of its distinct keywords does, and logTF
// saturates at 12 distinct keywords. keywords is the number of distinct,
// non-empty normalized keywords of the rule (empty and duplicate keywords do
// not dilute coverage). Under ScoringSpec a rule matches when at least one
// keyword is found and score >= MinConfidence.
//
// Under ScoringMinKeywords (the default) a rule with MinKeywords > 0 matches
// when it finds at least MinKeywords distinct keywords, whatever the length
// of its list; rules with MinKeywords 0 keep the spec's threshold. The
// spec's coverage term divides by the list length, so a longer list needs
// more keywords for the same min_confidence: min_confidence 0.3 asks for 3
// distinct keywords of 30 and 4 of 100. MinKeywords states the number
// directly and does not move when keywords are added. The score reported is
// the spec's in both modes. A phrase and a word inside it ("oil prices" and
// "oil") both count when the phrase occurs, which rule authors can use to
// let a specific phrase decide alone.
//
// Engine.Explain returns every rule that found a keyword with Matched, the
// keywords found, Keywords (distinct keywords) and Needed (how many it must
// find), for the playground and the evaluation command.
//
// # Effects
//
// A rule's Effect says what it does to its topic once it passes its
// threshold; the engine matches and scores every effect alike and carries
// the effect in its snapshot (Match.Rule.Effect, "" spelled out as
// EffectSupport), and the topic decision (package topicmodel) applies it:
// EffectSupport counts the rule's keywords as evidence for its topic (the
// only effect before effects existed, and the default), EffectExclude
// vetoes its topic for the document (CrimeFamily, "crime", vetoes every
// crime subcategory; Vetoes), and EffectOverride makes its topic the
// primary one whatever the model says, unless an exclude rule vetoed it.
//
// # Matchers
//
// A Matcher finds which keywords occur in normalized text. Three implement
// the same semantics and are checked against each other by the tests:
// NewAhoCorasickMatcher (cloudflare/ahocorasick over an alphabet of word
// codes, the default: about 117 MB at 1,000 rules x 20 keywords, 480 MB at
// 5,000, where the automaton over the keywords' bytes took 813 MB and 2.5 GB;
// a reload frees the old automaton before building the new one, serving
// from a token index meanwhile), NewTokenIndexMatcher
// (a hash index of first tokens with phrase continuations: much smaller and
// faster to build, see the package benchmarks) and NewNaiveMatcher (one scan
// per keyword: the test oracle and benchmark baseline).
package rules
