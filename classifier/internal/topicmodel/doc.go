// Package topicmodel decides an article's primary section from the keywords
// the rule engine's matcher finds: a linear model over keyword presence in
// the title and in the body, turned into calibrated probabilities by a
// softmax with a fitted temperature.
//
// A Model is data, like a rule: its vocabulary (keyed terms, one or two
// words), one weight per term and topic for the body and another for the
// title, a bias per topic and a temperature. Two kinds are built:
//
//   - the shipped default, compiled from a hand-written lexicon
//     (DefaultLexicon, lexicon.txt beside this file): topic, weight and
//     keyword per line, written by hand and learned from no data set;
//   - a trained model (Train), multinomial logistic regression on labelled
//     documents, whose vocabulary is every one- and two-word term that
//     occurs in at least two of them.
//
// A Scorer is a compiled Model: its terms in the matcher the rule engine uses
// (Aho-Corasick by default, one pass per field, whole words only), so a
// document's features are found in one pass over its title and one over its
// body. Score returns each topic's probability; Explain also returns the
// terms that pushed each topic and by how much.
//
// Decide turns probabilities and the rules' matches into the decision a
// classified document carries: one primary topic with its confidence,
// secondary topics only when they are really there, the crime fields, and
// no topic only when nothing was found. Each rule's effect applies there:
// a support rule's keywords are evidence for its topic, an exclude rule
// vetoes its topic (crime: every crime subcategory) and an override rule
// makes its topic the primary one, unless an exclude rule vetoed it.
package topicmodel
