package rules

// Text is a document's title and body with their keys, computed once each
// however many engines and models match the document: the rule engine, a
// shadow engine, the topic model and its base all key the same two fields,
// and keying (Normalize, then StemText when stemming is on) is most of a
// match's work on a short text. A Text is not safe for concurrent use.
type Text struct {
	Title, Body string
	// keyed[stem] are the title's and body's keys without (0) and with (1)
	// stemming, once computed.
	keyed [2]*[2]string
}

// NewText returns the Text of a title and body.
func NewText(title, body string) *Text { return &Text{Title: title, Body: body} }

// Keys returns the title's and body's keys: Normalize, then StemText when
// stem is set.
func (t *Text) Keys(stem bool) (title, body string) {
	i := 0
	if stem {
		i = 1
	}
	if k := t.keyed[i]; k != nil {
		return k[0], k[1]
	}
	if t.keyed[0] == nil {
		t.keyed[0] = &[2]string{Normalize(t.Title), Normalize(t.Body)}
	}
	if stem {
		t.keyed[1] = &[2]string{StemText(t.keyed[0][0]), StemText(t.keyed[0][1])}
	}
	k := t.keyed[i]
	return k[0], k[1]
}
