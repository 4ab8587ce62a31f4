package manifest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// webpack is webpack-manifest-plugin's output: a flat {"name": "path"} object, or
// create-react-app's asset-manifest.json {"files": {...}, "entrypoints": [...]}.
type webpack struct{}

func init() { register(webpack{}) }

func (webpack) format() Format { return "webpack" }

func (webpack) detect(body []byte, _ Options) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || len(top) == 0 {
		return false
	}
	if f, ok := top["files"]; ok {
		var files map[string]json.RawMessage
		return json.Unmarshal(f, &files) == nil
	}
	// Flat: every value a string.
	for _, v := range top {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return false
		}
	}
	return true
}

type craManifest struct {
	Files       map[string]json.RawMessage `json:"files"`
	Entrypoints json.RawMessage            `json:"entrypoints"`
}

func (w webpack) parse(body []byte, opts Options) (*Manifest, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, &InvalidError{Format: w.format(), Reason: jsonReason(err, body)}
	}
	r := newResolver(opts)
	base := dirOf(opts.Path)
	if _, ok := top["files"]; ok {
		var cra craManifest
		if err := json.Unmarshal(body, &cra); err != nil {
			return nil, &InvalidError{Format: w.format(), Reason: jsonReason(err, body)}
		}
		values := stringValues(cra.Files, r)
		for _, v := range values {
			r.add(base, v, "")
		}
		var entries []string
		if len(cra.Entrypoints) > 0 && string(cra.Entrypoints) != "null" {
			if err := json.Unmarshal(cra.Entrypoints, &entries); err != nil {
				return nil, &InvalidError{Format: w.format(), Reason: fmt.Sprintf("entrypoints is not a list of paths: %v", err)}
			}
		}
		// CRA bakes PUBLIC_URL into files but not into entrypoints: find it from a file
		// whose path ends with an entrypoint.
		public := publicURL(values, entries, base)
		for _, e := range entries {
			r.add(public, e, "")
		}
		return r.m, nil
	}
	for _, v := range stringValues(top, r) {
		r.add(base, v, "")
	}
	return r.m, nil
}

// stringValues returns the string values of obj in key order, skipping others with a reason.
func stringValues(obj map[string]json.RawMessage, r *resolver) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		var s string
		if err := json.Unmarshal(obj[k], &s); err != nil {
			r.m.Skipped = append(r.m.Skipped, Skip{Value: k, Reason: "value is not a string"})
			continue
		}
		out = append(out, s)
	}
	return out
}

func publicURL(files, entries []string, fallback string) string {
	for _, e := range entries {
		e = strings.TrimPrefix(e, "./")
		for _, f := range files {
			if strings.HasSuffix(f, "/"+e) {
				return strings.TrimSuffix(f, e)
			}
		}
	}
	return fallback
}

// jsonReason describes a JSON decoding error with the offset and the start of the body.
func jsonReason(err error, body []byte) string {
	var se *json.SyntaxError
	if ok := asSyntax(err, &se); ok {
		return fmt.Sprintf("invalid JSON at byte %d: %v (starts %s)", se.Offset, err, snippet(body))
	}
	return fmt.Sprintf("unexpected JSON shape: %v", err)
}
