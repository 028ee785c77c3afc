package object

// IsLabelValue reports whether s is a valid label value, as
// k8s.io/apimachinery's validation.IsValidLabelValue finds it (at most 63
// characters of [A-Za-z0-9-_.], the first and last alphanumeric, or empty),
// without its regular expression: it is on the path of every child a
// reconcile writes (its owner record), where the expression cost more than
// the rest of the record. TestNamesAgreeWithValidation and FuzzNames check
// the two agree.
func IsLabelValue(s string) bool {
	return s == "" || isLabelName(s)
}

// IsQualifiedName reports whether s is a qualified name (a label key, a
// finalizer name: "example.com/cleanup"), as validation.IsQualifiedName
// finds it, without its regular expressions: an optional DNS-1123
// subdomain prefix and "/", then a name of 1 to 63 characters of
// [A-Za-z0-9-_.], the first and last alphanumeric.
func IsQualifiedName(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return isDNS1123Subdomain(s[:i]) && isLabelName(s[i+1:])
		}
	}
	return isLabelName(s)
}

// isLabelName: 1 to 63 characters of [A-Za-z0-9-_.], the first and last
// alphanumeric.
func isLabelName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			continue
		}
		if i == 0 || i == len(s)-1 || (c != '-' && c != '_' && c != '.') {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain: 1 to 253 characters, dot-separated labels of
// [a-z0-9-], each starting and ending with [a-z0-9].
func isDNS1123Subdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !isLowerAlnum(c) && c != '-' {
				return false
			}
			continue
		}
		// s[start:i] is one label.
		if i == start || !isLowerAlnum(s[start]) || !isLowerAlnum(s[i-1]) {
			return false
		}
		start = i + 1
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
