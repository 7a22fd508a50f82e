package esclient

import (
	"encoding/json"
	"testing"
)

func TestErrorObjectNamesTheRootCause(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`{"type":"search_phase_execution_exception","reason":"all shards failed","root_cause":[{"type":"query_shard_exception","reason":"failed to create query"}]}`,
			"query_shard_exception: failed to create query"},
		{`{"type":"index_not_found_exception","reason":"no such index [x]"}`, "index_not_found_exception: no such index [x]"},
		{`{}`, "unknown error"},
	} {
		var e ErrorObject
		if err := json.Unmarshal([]byte(tt.body), &e); err != nil {
			t.Fatal(err)
		}
		if got := e.String(); got != tt.want {
			t.Errorf("%s: String() = %q, want %q", tt.body, got, tt.want)
		}
	}
}
