package esclient

// ErrorObject is the error object Elasticsearch puts inside an answer that
// succeeded as a whole: one search of a multi-search, an index that a
// resolve or a field-capabilities call could not read.
type ErrorObject struct {
	Type      string `json:"type"`
	Reason    string `json:"reason"`
	RootCause []struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"root_cause"`
}

// String names the most specific cause: the first root cause when there is
// one ("search_phase_execution_exception: all shards failed" says little).
func (e ErrorObject) String() string {
	if len(e.RootCause) > 0 && e.RootCause[0].Type != "" {
		return e.RootCause[0].Type + ": " + e.RootCause[0].Reason
	}
	if e.Type == "" {
		return "unknown error"
	}
	return e.Type + ": " + e.Reason
}
