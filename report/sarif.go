package report

import (
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/polygraph-dev/polygraph/policy"
)

// SARIFSchema is the URI of the SARIF 2.1.0 schema that SARIF output declares.
const SARIFSchema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool             sarifTool     `json:"tool"`
	Language         string        `json:"language"`
	NewlineSequences []string      `json:"newlineSequences"`
	ColumnKind       string        `json:"columnKind"`
	Results          []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Language       string      `json:"language"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	DefaultConfiguration sarifRuleLevel `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties"`
}

type sarifRuleLevel struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Level      string          `json:"level"`
	Message    sarifText       `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Properties map[string]any  `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           sarifRegion   `json:"region"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
	EndLine     int `json:"endLine"`
	EndColumn   int `json:"endColumn,omitempty"`
}

// renderSARIF writes a SARIF 2.1.0 log: every rule with its help text, every finding as a result
// whose region covers the image value.
func renderSARIF(w io.Writer, r *policy.Report, o Options) error {
	driver := sarifDriver{Name: "polygraph", Language: "en-US", InformationURI: "https://github.com/polygraph-dev/polygraph", Version: o.Version}
	index := map[string]int{}
	for i, ru := range policy.Rules {
		index[ru.ID] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID:                   ru.ID,
			Name:                 ruleName(ru.ID),
			ShortDescription:     sarifText{Text: ru.Title},
			FullDescription:      sarifText{Text: ru.Title + "."},
			Help:                 sarifText{Text: ru.Help, Markdown: "**" + ru.Title + "**\n\n" + ru.Help},
			DefaultConfiguration: sarifRuleLevel{Level: string(ru.Severity)},
			Properties:           map[string]any{"tags": []string{"supply-chain", "containers"}},
		})
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Language: "en-US", NewlineSequences: []string{"\r\n", "\n"},
		ColumnKind: "unicodeCodePoints", Results: []sarifResult{}}
	for _, f := range r.Findings {
		msg := f.Message
		if f.Suggestion != "" {
			msg += ". Fix: " + f.Suggestion
		}
		res := sarifResult{
			RuleID:    f.Rule,
			RuleIndex: index[f.Rule],
			Level:     string(f.Severity),
			Message:   sarifText{Text: msg},
			Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{
				ArtifactLocation: sarifArtifact{URI: sarifURI(f.File)},
				Region:           sarifRegion{StartLine: max(f.Line, 1), StartColumn: max(f.Column, 1), EndLine: max(f.Line, 1), EndColumn: f.EndColumn},
			}}},
			Properties: map[string]any{"image": f.Image},
		}
		if f.Suggestion != "" {
			res.Properties["suggestion"] = f.Suggestion
		}
		if res.Locations[0].PhysicalLocation.Region.EndColumn <= res.Locations[0].PhysicalLocation.Region.StartColumn {
			res.Locations[0].PhysicalLocation.Region.EndColumn = 0
		}
		run.Results = append(run.Results, res)
	}
	return renderPolicyJSON(w, sarifLog{Schema: SARIFSchema, Version: "2.1.0", Runs: []sarifRun{run}})
}

// ruleName turns mutable-tag into MutableTag (SARIF's reportingDescriptor.name convention).
func ruleName(id string) string {
	parts := strings.Split(id, "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}

// sarifURI turns a file name into a URI reference: relative paths stay relative (code scanning
// resolves them against the repository root), absolute ones become file: URIs.
func sarifURI(file string) string {
	if file == policy.Stdin {
		return "stdin"
	}
	p := filepath.ToSlash(file)
	p = strings.TrimPrefix(p, "./")
	if strings.HasPrefix(p, "/") {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: p}).String()
}
