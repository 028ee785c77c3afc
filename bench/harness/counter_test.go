package harness

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCountsMarshalJSON(t *testing.T) {
	c := Counts{{Verb: "PATCH", Resource: "teams", Subresource: "status", Code: 200}: {Count: 2}}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"PATCH teams/status 200"`) {
		t.Errorf("JSON %s lacks the key", data)
	}
}
