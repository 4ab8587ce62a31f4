package probe

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// pointer resolves an RFC 6901 JSON pointer in a decoded document and returns the value as a
// string (numbers and booleans formatted, objects refused).
func pointer(doc any, ptr string) (string, error) {
	if ptr == "" {
		return scalar(doc, ptr)
	}
	if !strings.HasPrefix(ptr, "/") {
		return "", fmt.Errorf("JSON pointer %q must start with /", ptr)
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return "", fmt.Errorf("JSON pointer %q: no key %q", ptr, tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return "", fmt.Errorf("JSON pointer %q: no index %q", ptr, tok)
			}
			cur = v[i]
		default:
			return "", fmt.Errorf("JSON pointer %q: %q is inside a scalar", ptr, tok)
		}
	}
	return scalar(cur, ptr)
}

func scalar(v any, ptr string) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case float64, bool, json.Number:
		return fmt.Sprint(x), nil
	case nil:
		return "", fmt.Errorf("JSON pointer %q is null", ptr)
	}
	return "", fmt.Errorf("JSON pointer %q is not a string", ptr)
}
