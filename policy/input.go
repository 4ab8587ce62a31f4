package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Kind names the kind of input a file was recognised as.
type Kind string

// Input kinds.
const (
	KindKubernetes     Kind = "kubernetes"
	KindCompose        Kind = "compose"
	KindECS            Kind = "ecs"
	KindCloudFormation Kind = "cloudformation"
	KindDockerfile     Kind = "dockerfile"
	KindWorkflow       Kind = "github-workflow"
)

// Image is one image reference found in an input, with the position of its value.
type Image struct {
	// File is the input's name as given ("-" is shown as "<stdin>").
	File string `json:"file"`
	// Line and Column (1-based) point at the first character of the image value itself.
	Line   int `json:"line"`
	Column int `json:"column"`
	// Raw is the value as written (before interpolation).
	Raw string `json:"raw"`
	// Ref is the reference after interpolation of defaults; "" when Unresolved is set.
	Ref string `json:"image"`
	// Where describes the location in words ("Deployment/web container app").
	Where string `json:"where"`
	// Kind is the kind of input the image was found in.
	Kind Kind `json:"kind"`
	// Unresolved says why the reference could not be determined statically (a variable without a
	// default, a CloudFormation intrinsic function, a workflow expression); "" otherwise.
	Unresolved string `json:"unresolved,omitempty"`
	// Unreadable says why polygraph could not read the construct at this position (a limit on
	// aliases, merges or variable expansion was hit); Ref and Raw may be empty. It is an error
	// finding: what cannot be read cannot be said to pass.
	Unreadable string `json:"unreadable,omitempty"`
}

// KindYAML is the kind of a YAML document too large or deep to read far enough to recognise.
const KindYAML Kind = "yaml"

// Extract recognises an input by its content and returns the image references in it. It returns
// a nil kind and no error for content that is none of the supported kinds. Content beyond the
// limits on variable expansion (MaxExpandDepth, MaxExpandBytes) or on YAML aliases and merges
// (MaxYAMLNodes, MaxMergeDepth) yields an Image with Unreadable set at its position. It returns
// the context's error when the context ends.
func Extract(ctx context.Context, file string, data []byte) (Kind, []Image, error) {
	if !utf8.Valid(data) {
		return "", nil, nil
	}
	if isDockerfile(data) {
		imgs, err := dockerfileImages(ctx, file, data)
		return KindDockerfile, imgs, err
	}
	docs, err := decodeYAML(data)
	if err != nil {
		return "", nil, fmt.Errorf("parsing %q: %w", file, err)
	}
	var (
		kind Kind
		out  []Image
	)
	for i, doc := range docs {
		if err := ctx.Err(); err != nil {
			return "", nil, err
		}
		if why, at := checkDoc(doc); why != "" {
			if kind == "" {
				kind = KindYAML
			}
			out = append(out, unreadable(file, KindYAML, fmt.Sprintf("YAML document %d", i+1), at, why))
			continue
		}
		k, imgs := extractDoc(ctx, file, doc)
		if k != "" && (kind == "" || kind == KindYAML) {
			kind = k
		}
		out = append(out, imgs...)
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	return kind, out, nil
}

func extractDoc(ctx context.Context, file string, doc *yaml.Node) (Kind, []Image) {
	root := deref(doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return "", nil
	}
	switch {
	case isKubernetes(root):
		return KindKubernetes, kubernetesImages(file, root)
	case isCloudFormation(root):
		return KindCloudFormation, cloudFormationImages(file, root)
	case isECS(root):
		return KindECS, ecsImages(file, root)
	case isWorkflow(root):
		return KindWorkflow, workflowImages(file, root)
	case isDockerAction(root):
		return KindWorkflow, dockerActionImages(file, root)
	case isCompose(root):
		return KindCompose, composeImages(ctx, file, root)
	case isGitLabCI(root):
		return KindGitLabCI, gitlabImages(ctx, file, root)
	}
	return "", nil
}

// decodeYAML decodes every document of a YAML (or JSON) stream into nodes that keep positions.
func decodeYAML(data []byte) ([]*yaml.Node, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		// JSON: tabs are whitespace between tokens (never inside a valid string), which YAML
		// rejects in some places. A space keeps every column where it was.
		data = bytes.ReplaceAll(data, []byte("\t"), []byte(" "))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
}

// deref follows document and alias nodes.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil {
		switch n.Kind {
		case yaml.DocumentNode:
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		case yaml.AliasNode:
			n = n.Alias
		default:
			return n
		}
	}
	return nil
}

// get returns the value of key in mapping n (following aliases and << merge keys), or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	return getDepth(deref(n), key, 0, map[*yaml.Node]bool{})
}

// getDepth looks key up in n and in the mappings merged into it, visiting each mapping once (so
// that aliases cannot make a lookup exponential).
func getDepth(n *yaml.Node, key string, depth int, seen map[*yaml.Node]bool) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode || depth > MaxMergeDepth || seen[n] {
		return nil
	}
	seen[n] = true
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i].Tag != "!!merge" {
			return nonNull(deref(n.Content[i+1]))
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Tag != "!!merge" {
			continue
		}
		for _, m := range mergedMaps(n.Content[i+1]) {
			if r := getDepth(m, key, depth+1, seen); r != nil {
				return r
			}
		}
	}
	return nil
}

// nonNull returns n, or nil for a YAML null (null, ~, an empty value): in every schema read
// here a null means the same as a key left out (`container: null` is a workflow job without
// a container, never an image named "null").
func nonNull(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	return n
}

// str returns the value of a scalar node, "" for anything else.
func str(n *yaml.Node) string {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// entries returns the key/value pairs of a mapping in order, then those its << merge keys bring
// in that the mapping does not set itself (as YAML merges them: the mapping's own keys first,
// then earlier merged mappings before later ones).
func entries(n *yaml.Node) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	have := map[string]bool{}
	collectEntries(deref(n), 0, map[*yaml.Node]bool{}, have, &out)
	return out
}

func collectEntries(n *yaml.Node, depth int, seen map[*yaml.Node]bool, have map[string]bool, out *[][2]*yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode || depth > MaxMergeDepth || seen[n] {
		return
	}
	seen[n] = true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Tag == "!!merge" || have[k.Value] {
			continue
		}
		have[k.Value] = true
		*out = append(*out, [2]*yaml.Node{k, nonNull(deref(n.Content[i+1]))})
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Tag == "!!merge" {
			for _, m := range mergedMaps(n.Content[i+1]) {
				collectEntries(m, depth+1, seen, have, out)
			}
		}
	}
}

// items returns the elements of a sequence.
func items(n *yaml.Node) []*yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		out = append(out, nonNull(deref(c)))
	}
	return out
}

// position returns where the characters of a scalar's value start: after the opening quote of
// a quoted scalar.
func position(n *yaml.Node) (line, col int) {
	line, col = n.Line, n.Column
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		col++
	}
	return line, col
}

// scalarImage makes an Image from a scalar holding a reference literally (no interpolation). A
// value holding a placeholder that a tool substitutes before deploy (envsubst's ${VAR}, a
// template's {{ }}) is unresolved, not an invalid reference.
func scalarImage(file string, kind Kind, where string, n *yaml.Node) Image {
	line, col := position(n)
	img := Image{File: file, Line: line, Column: col, Raw: n.Value, Ref: n.Value, Where: where, Kind: kind}
	if kind != KindCompose && kind != KindWorkflow && kind != KindGitLabCI && (strings.Contains(n.Value, "$") || strings.Contains(n.Value, "{{")) {
		img.Ref = ""
		img.Unresolved = "the image holds a placeholder that is substituted outside this file"
	}
	return img
}

// hasExpression reports whether s holds a GitHub Actions expression.
func hasExpression(s string) bool { return strings.Contains(s, "${{") }
