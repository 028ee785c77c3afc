package ownership

import (
	"encoding/json"
	"testing"
)

// TestSameFields: what an apply sends is judged against the field set its
// manager owns and the live values, without a schema; every case where
// the apply would change something (a value, a field released, a field
// newly owned, an atomic map or list replaced whole) is false.
func TestSameFields(t *testing.T) {
	const containers = `{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:image":{}}}}}`
	for _, tc := range []struct {
		name               string
		sent, fields, live string
		want               bool
	}{
		{"scalars equal", `{"a":1,"b":"x"}`, `{"f:a":{},"f:b":{}}`, `{"a":1,"b":"x","c":true}`, true},
		{"a value differs", `{"a":1}`, `{"f:a":{}}`, `{"a":2}`, false},
		{"a field owned, no longer sent: released", `{"a":1}`, `{"f:a":{},"f:b":{}}`, `{"a":1,"b":2}`, false},
		{"a field sent, not owned yet", `{"a":1,"b":2}`, `{"f:a":{}}`, `{"a":1,"b":2}`, false},
		{"a field sent, absent live", `{"a":1}`, `{"f:a":{}}`, `{}`, false},
		{"nested, others' fields beside", `{"m":{"x":"1"}}`, `{"f:m":{"f:x":{}}}`, `{"m":{"x":"1","y":"2"}}`, true},
		{"atomic map equal", `{"sel":{"matchLabels":{"a":"b"}}}`, `{"f:sel":{}}`, `{"sel":{"matchLabels":{"a":"b"}}}`, true},
		{"atomic map with more live", `{"sel":{"matchLabels":{"a":"b"}}}`, `{"f:sel":{}}`, `{"sel":{"matchLabels":{"a":"b"},"matchExpressions":[]}}`, false},
		{"atomic list equal", `{"args":["a","b"]}`, `{"f:args":{}}`, `{"args":["a","b"]}`, true},
		{"atomic list differs", `{"args":["a"]}`, `{"f:args":{}}`, `{"args":["a","b"]}`, false},
		{"keyed list, defaults beside", `{"spec":{"containers":[{"name":"app","image":"i:1"}]}}`, containers,
			`{"spec":{"containers":[{"name":"app","image":"i:1","imagePullPolicy":"IfNotPresent"}]}}`, true},
		{"keyed list, another's element too", `{"spec":{"containers":[{"name":"app","image":"i:1"}]}}`, containers,
			`{"spec":{"containers":[{"name":"side","image":"s"},{"name":"app","image":"i:1"}]}}`, true},
		{"keyed list, image differs", `{"spec":{"containers":[{"name":"app","image":"i:2"}]}}`, containers,
			`{"spec":{"containers":[{"name":"app","image":"i:1"}]}}`, false},
		{"keyed list, another element sent", `{"spec":{"containers":[{"name":"app","image":"i:1"},{"name":"b","image":"b"}]}}`, containers,
			`{"spec":{"containers":[{"name":"app","image":"i:1"},{"name":"b","image":"b"}]}}`, false},
		{"keyed list, element gone live", `{"spec":{"containers":[{"name":"app","image":"i:1"}]}}`, containers,
			`{"spec":{"containers":[]}}`, false},
		{"set", `{"fin":["a","b"]}`, `{"f:fin":{"v:\"a\"":{},"v:\"b\"":{}}}`, `{"fin":["b","c","a"]}`, false}, // an apply orders them as sent: [c a b]
		{"set, one owned no longer sent", `{"fin":["a"]}`, `{"f:fin":{"v:\"a\"":{},"v:\"b\"":{}}}`, `{"fin":["a","b"]}`, false},
		{"set, one missing live", `{"fin":["a","b"]}`, `{"f:fin":{"v:\"a\"":{},"v:\"b\"":{}}}`, `{"fin":["a"]}`, false},
		{"list keyed by position", `{"l":[1]}`, `{"f:l":{"i:0":{}}}`, `{"l":[1]}`, false},
		{"null sent", `{"a":null}`, `{"f:a":{}}`, `{}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent, fields, live any
			for _, p := range []struct {
				s  string
				to *any
			}{{tc.sent, &sent}, {tc.fields, &fields}, {tc.live, &live}} {
				if err := json.Unmarshal([]byte(p.s), p.to); err != nil {
					t.Fatal(err)
				}
			}
			if got := sameFields(sent, fields.(map[string]any), live); got != tc.want {
				t.Errorf("sameFields = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSameFieldsKeepsOrder(t *testing.T) {
	const two = `{"f:l":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}},"k:{\"name\":\"b\"}":{".":{},"f:name":{}}}}`
	const set = `{"f:fin":{"v:\"a\"":{},"v:\"b\"":{}}}`
	for _, tc := range []struct {
		name               string
		sent, fields, live string
		want               bool
	}{
		{"keyed, same order", `{"l":[{"name":"a"},{"name":"b"}]}`, two, `{"l":[{"name":"a"},{"name":"x"},{"name":"b"}]}`, true},
		{"keyed, swapped", `{"l":[{"name":"b"},{"name":"a"}]}`, two, `{"l":[{"name":"a"},{"name":"b"}]}`, false},
		{"set, same order", `{"fin":["a","b"]}`, set, `{"fin":["c","a","b"]}`, true},
		{"set, swapped", `{"fin":["b","a"]}`, set, `{"fin":["a","b"]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent, fields, live any
			_ = json.Unmarshal([]byte(tc.sent), &sent)
			_ = json.Unmarshal([]byte(tc.fields), &fields)
			_ = json.Unmarshal([]byte(tc.live), &live)
			if got := sameFields(sent, fields.(map[string]any), live); got != tc.want {
				t.Errorf("sameFields = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSameFieldsMemberWithoutChildren: a node this manager owns with nothing
// under it is atomic only where no other manager owns a field under it.
func TestSameFieldsMemberWithoutChildren(t *testing.T) {
	var sent, fields, live, other any
	_ = json.Unmarshal([]byte(`{"m":{"a":1}}`), &sent)
	_ = json.Unmarshal([]byte(`{"f:m":{}}`), &fields)
	_ = json.Unmarshal([]byte(`{"m":{"a":1}}`), &live)
	_ = json.Unmarshal([]byte(`{"f:m":{"f:a":{}}}`), &other)
	if !sameFields(sent, fields.(map[string]any), live) {
		t.Error("an atomic map, equal: want true")
	}
	if sameFields(sent, fields.(map[string]any), live, managerSet{Manager: "other", Set: other.(map[string]any)}) {
		t.Error("a granular map whose field another manager owns: want false (the apply owns it too)")
	}
}
