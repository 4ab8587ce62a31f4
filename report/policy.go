package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/policy"
)

// PolicyFormats lists the output formats of policy check.
var PolicyFormats = []string{"text", "json", "sarif", "github"}

// RenderPolicy writes the policy report in the named format: text, json (schema
// polygraph.policy/v1), sarif (SARIF 2.1.0) or github (workflow annotations).
func RenderPolicy(w io.Writer, r *policy.Report, format string, o Options) error {
	switch format {
	case "text":
		return renderPolicyText(w, r, o)
	case "json":
		return renderPolicyJSON(w, r)
	case "sarif":
		return renderSARIF(w, r, o)
	case "github":
		return renderGitHub(w, r)
	}
	return fmt.Errorf("unknown output format %q (one of %s)", format, strings.Join(PolicyFormats, ", "))
}

// renderPolicyJSON writes v as indented JSON, without escaping HTML characters.
func renderPolicyJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
