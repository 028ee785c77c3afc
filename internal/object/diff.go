package object

// MergeDiff is the JSON merge patch (RFC 7386) that turns before into
// after, both JSON values as [ToMap] makes them: a key of after that before
// lacks, or whose value differs, is set (maps present in both are walked
// into, lists and other values are replaced whole); a key of before that
// after lacks is set to null. It is what encoding both maps and asking
// jsonpatch.CreateMergePatch gives, without the JSON: values compare as
// [SameJSON] (an int64 and a float64 of one value are equal, integers are
// compared exactly, past 2^53 too; a Go nil map or list is null, not an
// empty one, as the JSON encoder has it). The patch holds copies of
// after's values: changing it changes neither input. No difference is nil:
// a map is made only where there is a difference (most maps of two
// versions of an object are equal).
func MergeDiff(before, after map[string]any) map[string]any {
	var diff map[string]any
	set := func(k string, v any) {
		if diff == nil {
			diff = map[string]any{}
		}
		diff[k] = v
	}
	for k, av := range after {
		bv, ok := before[k]
		if !ok {
			set(k, copyValue(av))
			continue
		}
		am, aIsMap := av.(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		if aIsMap && bIsMap && am != nil && bm != nil {
			if sub := MergeDiff(bm, am); sub != nil {
				set(k, sub)
			}
			continue
		}
		if !SameJSON(bv, av) {
			set(k, copyValue(av))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			set(k, nil)
		}
	}
	return diff
}

// copyValue copies the maps and lists of a JSON value, a Go nil map or
// list as null ([IsNull]), as the merge patch it goes into has it.
// Strings, numbers and bools are shared.
func copyValue(v any) any {
	if IsNull(v) {
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}
