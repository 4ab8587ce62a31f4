package policy

import (
	"encoding/json"
	"fmt"
	"io"
)

// Format is an output format.
type Format string

// Output formats.
const (
	FormatText   Format = "text"
	FormatJSON   Format = "json"
	FormatSARIF  Format = "sarif"
	FormatGitHub Format = "github"
)

// Formats lists the output formats.
var Formats = []Format{FormatText, FormatJSON, FormatSARIF, FormatGitHub}

// RenderOptions tune rendering.
type RenderOptions struct {
	// Color colours text output.
	Color bool
	// Quiet prints only the summary line in text output.
	Quiet bool
	// Version is polygraph's version, recorded in SARIF.
	Version string
}

// Render writes the report in the given format.
func Render(w io.Writer, r *Report, f Format, o RenderOptions) error {
	switch f {
	case FormatText:
		return renderText(w, r, o)
	case FormatJSON:
		return renderJSON(w, r)
	case FormatSARIF:
		return renderSARIF(w, r, o)
	case FormatGitHub:
		return renderGitHub(w, r)
	}
	return fmt.Errorf("unknown output format %q (use text, json, sarif or github)", f)
}

func renderJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
