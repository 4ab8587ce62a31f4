package policy

import (
	"sort"

	"github.com/polygraph-dev/polygraph/model"
)

// Schema is the schema name of the JSON policy report.
const Schema = "polygraph.policy/v1"

// Finding is one policy violation at the position of an image value.
type Finding struct {
	// Rule is the rule's identifier (mutable-tag, latest-tag, ...).
	Rule string `json:"rule"`
	// Severity is error or warning: the severity verify's findings have too.
	Severity model.Severity `json:"severity"`
	// File is the input the image is in.
	File string `json:"file"`
	// Line and Column (1-based) point at the first character of the image value.
	Line   int `json:"line"`
	Column int `json:"column"`
	// EndColumn is one past the last character of the value as written, when known.
	EndColumn int `json:"end_column,omitempty"`
	// Image is the reference after interpolation (or as written when it could not be resolved).
	Image string `json:"image"`
	// Message explains the finding in words.
	Message string `json:"message"`
	// Suggestion is the pinned reference to paste, when --resolve found one.
	Suggestion string `json:"suggestion"`
}

// Summary counts what was checked.
type Summary struct {
	// Files is the number of files recognised as deploy configuration.
	Files int `json:"files"`
	// Images is the number of image references found.
	Images int `json:"images"`
	// Findings is the number of findings reported.
	Findings int `json:"findings"`
	// Suppressed is the number of findings that a valid exception suppressed.
	Suppressed int `json:"suppressed"`
	// Skipped lists the files not checked, by path, as earlier versions did: excluded
	// (policy.exclude, --skip-path), or met in a directory and not parseable, not a regular
	// file or too large. Its length is the count the text summary prints.
	Skipped []string `json:"skipped,omitempty"`
	// SkippedFiles lists the same files, each with the reason.
	SkippedFiles []Skip `json:"skipped_files,omitempty"`
}

// Report is the result of a policy check (schema polygraph.policy/v1).
type Report struct {
	// Schema is always polygraph.policy/v1.
	Schema string `json:"schema"`
	// Verdict is fail (an error), warn (warnings only) or pass.
	Verdict string `json:"verdict"`
	// Findings are sorted by file, line, column and rule.
	Findings []Finding `json:"findings"`
	// Summary counts what was checked.
	Summary Summary `json:"summary"`
}

// Worst returns the most serious severity among the findings, "" when there are none.
func (r *Report) Worst() model.Severity {
	var w model.Severity
	for _, f := range r.Findings {
		if f.Severity.Rank() > w.Rank() {
			w = f.Severity
		}
	}
	return w
}

// FailsAt reports whether any finding is at or above the given severity. A threshold of "" or
// "never" never fails.
func (r *Report) FailsAt(threshold model.Severity) bool {
	if threshold.Rank() == 0 {
		return false
	}
	return r.Worst().Rank() >= threshold.Rank()
}

// finish sorts the findings and computes the verdict and counts.
func (r *Report) finish() {
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Rule < b.Rule
	})
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	r.Schema = Schema
	r.Summary.Findings = len(r.Findings)
	switch r.Worst() {
	case model.SeverityError:
		r.Verdict = "fail"
	case model.SeverityWarning:
		r.Verdict = "warn"
	default:
		r.Verdict = "pass"
	}
}
