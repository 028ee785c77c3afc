package harness

import (
	"encoding/json"
	"maps"
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

// TestCountsRoundTripJSON: what -json writes, -from-json reads back.
func TestCountsRoundTripJSON(t *testing.T) {
	c := Counts{
		{Verb: "PATCH", Resource: "teams", Subresource: "status", Code: 200}: {Count: 2, ReqBytes: 10, RespBytes: 20},
		{Verb: "PUT", Resource: "configmaps", DryRun: true, Code: 200}:       {Count: 1},
		{Verb: "WATCH", Resource: "teams", Code: 200}:                        {Count: 3},
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Counts
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(back, c) {
		t.Errorf("round trip:\n got %v\nwant %v", back, c)
	}
	for _, bad := range []string{`{"PATCH teams":{}}`, `{"PATCH teams x":{}}`, `{"DRYRUN":{}}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
