package testapi

// Scribble changes every map and list inside v, a JSON value: what shares
// them with v sees the change. Tests use it to show that a result holds
// copies, not the maps of its inputs.
func Scribble(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			Scribble(e)
		}
		v["scribbled"] = true
	case []any:
		for i, e := range v {
			Scribble(e)
			v[i] = "scribbled"
		}
	}
}
