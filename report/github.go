package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/policy"
)

// renderGitHub writes GitHub Actions workflow commands (::error file=...,line=...::message), which
// GitHub shows as annotations on the lines of the pull request.
func renderGitHub(w io.Writer, r *policy.Report) error {
	var b strings.Builder
	for _, f := range r.Findings {
		cmd := "error"
		if f.Severity == model.SeverityWarning {
			cmd = "warning"
		}
		fmt.Fprintf(&b, "::%s file=%s,line=%d,col=%d", cmd, ghProperty(f.File), f.Line, f.Column)
		if f.EndColumn > f.Column {
			fmt.Fprintf(&b, ",endColumn=%d", f.EndColumn)
		}
		msg := f.Message
		if f.Suggestion != "" {
			msg += "\nfix: " + f.Suggestion
		}
		fmt.Fprintf(&b, ",title=%s::%s\n", ghProperty("polygraph "+f.Rule), ghData(msg))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ghData escapes a workflow command's message.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
