package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/polygraph-dev/polygraph/internal/safeio"
)

// Error is a configuration error: it names the file and, where it can, the line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return e.Msg
}

// MaxFileSize bounds the size of a config file.
const MaxFileSize = 4 << 20

// Load reads, decodes, defaults and validates the config file at path. It must be a regular
// file of at most MaxFileSize bytes.
func Load(path string) (*Config, error) {
	data, err := safeio.ReadFile(path, MaxFileSize)
	if err != nil {
		var se *safeio.Error
		if errors.As(err, &se) {
			err = se.Err
			if se.Info != "" {
				err = fmt.Errorf("%w (%s)", se.Err, se.Info)
			}
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("reading config: %v", err)}
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	return Parse(data, path, dir)
}

// Parse decodes, defaults and validates config bytes; name is used in errors and dir is where
// relative paths resolve.
func Parse(data []byte, name, dir string) (*Config, error) {
	c, root, err := decode(data, name)
	if err != nil {
		return nil, err
	}
	c.File, c.Dir = name, dir
	v := &validator{cfg: c, root: root}
	c.setDefaults()
	v.validate()
	if v.err != nil {
		return nil, v.err
	}
	return c, nil
}

// decode decodes the document strictly and returns it with its node tree (for the lines of
// validation errors). A long fleet.static list is decoded apart, in chunks (see splitStatic);
// the tree then holds the rest of the document.
func decode(data []byte, name string) (*Config, *yaml.Node, error) {
	if l, ok := splitStatic(data); ok {
		if static, ok := decodeStatic(data, l); ok {
			c, root, err := decodeDocument(blankStatic(data, l), name)
			if err == nil && nullAt(root, l.keyLine+1, "fleet", "static") {
				c.Fleet.Static = static
				return c, root, nil
			}
		}
	}
	c, root, err := decodeDocument(data, name)
	if err != nil {
		return nil, nil, err
	}
	if seq := nodeAt(root, "fleet", "static"); seq != nil && seq.Kind == yaml.SequenceNode && len(seq.Content) == len(c.Fleet.Static) {
		for i, n := range seq.Content {
			c.Fleet.Static[i].Line = n.Line
		}
	}
	return c, root, nil
}

// decodeDocument decodes data into a Config, rejecting unknown keys, and returns the node tree
// too.
func decodeDocument(data []byte, name string) (*Config, *yaml.Node, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil && err != io.EOF {
		return nil, nil, yamlError(name, err)
	}
	if root.Kind != 0 {
		// One file, one configuration: a second document would be silently ignored.
		var next yaml.Node
		if err := dec.Decode(&next); err == nil {
			return nil, nil, &Error{File: name, Line: docLine(&next), Msg: "a second YAML document starts here; a config file holds one document"}
		} else if err != io.EOF {
			return nil, nil, yamlError(name, err)
		}
		if err := checkAliases(name, &root); err != nil {
			return nil, nil, err
		}
	}
	c := &Config{}
	if root.Kind != 0 {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(c); err != nil && err != io.EOF {
			return nil, nil, yamlError(name, err)
		}
	}
	return c, &root, nil
}

// nodeAt returns the value under a path of mapping keys, or nil.
func nodeAt(root *yaml.Node, keys ...string) *yaml.Node {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, k := range keys {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// nullAt reports whether the value under keys is null and its key stands on line (1-based).
func nullAt(root *yaml.Node, line int, keys ...string) bool {
	parent := nodeAt(root, keys[:len(keys)-1]...)
	if parent == nil || parent.Kind != yaml.MappingNode {
		return false
	}
	found := 0
	for i := 0; i+1 < len(parent.Content); i += 2 {
		k, v := parent.Content[i], parent.Content[i+1]
		if k.Value != keys[len(keys)-1] {
			continue
		}
		found++
		if k.Line != line || v.Kind != yaml.ScalarNode || v.Tag != "!!null" {
			return false
		}
	}
	return found == 1
}

var (
	lineRe      = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownRe   = regexp.MustCompile(`^field (\S+) not found in type config\.(\w+)$`)
	unmarshalRe = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (\\S+)$")
)

// yamlError turns a yaml error into *Error with the file and line, in plain words.
func yamlError(file string, err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return &Error{File: file, Line: le.line, Msg: le.msg}
	}
	var te *yaml.TypeError
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	m := lineRe.FindStringSubmatch(msg)
	if m == nil {
		return &Error{File: file, Msg: "invalid YAML: " + msg}
	}
	line, _ := strconv.Atoi(m[1])
	text := m[2]
	if u := unknownRe.FindStringSubmatch(text); u != nil {
		section := sectionNames[u[2]]
		if section == "" {
			section = strings.ToLower(u[2])
		}
		text = fmt.Sprintf("unknown key %q in %s", u[1], section)
		if s := suggest(u[1], u[2]); s != "" {
			text += fmt.Sprintf(" (did you mean %q?)", s)
		}
	} else if u := unmarshalRe.FindStringSubmatch(text); u != nil {
		text = fmt.Sprintf("expected %s, got %s %q", typeWord(u[3]), kindWord(u[1]), u[2])
	} else if strings.HasPrefix(msg, "line ") && te == nil {
		text = "invalid YAML: " + text
	}
	return &Error{File: file, Line: line, Msg: text}
}

var sectionNames = map[string]string{
	"Config": "the top level", "Release": "release", "Fleet": "fleet", "StaticInstance": "fleet.static",
	"EC2": "fleet.ec2", "Probe": "probe", "Manifest": "probe.manifest", "Claim": "probe.version",
	"Digest": "probe.digest", "TLS": "probe.tls", "CDN": "cdn", "Hook": "hook", "Policy": "policy",
	"plain": "policy.exceptions",
}

var typeByName = map[string]reflect.Type{
	"Config": reflect.TypeOf(Config{}), "Release": reflect.TypeOf(Release{}), "Fleet": reflect.TypeOf(Fleet{}),
	"StaticInstance": reflect.TypeOf(StaticInstance{}), "EC2": reflect.TypeOf(EC2{}), "Probe": reflect.TypeOf(Probe{}),
	"Manifest": reflect.TypeOf(Manifest{}), "Claim": reflect.TypeOf(Claim{}), "Digest": reflect.TypeOf(Digest{}),
	"TLS": reflect.TypeOf(TLS{}), "CDN": reflect.TypeOf(CDN{}), "Hook": reflect.TypeOf(Hook{}), "Policy": reflect.TypeOf(Policy{}),
}

// suggest returns the known key of the named type closest to key, when close enough.
func suggest(key, typeName string) string {
	t, ok := typeByName[typeName]
	if !ok {
		return ""
	}
	best, bestD := "", 3
	for k := range yamlKeys(reflect.New(t).Interface()) {
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func yamlKeys(v any) map[string]bool {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			keys[tag] = true
		}
	}
	return keys
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func typeWord(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["):
		return "a mapping"
	}
	return "a " + strings.TrimPrefix(goType, "config.")
}

func kindWord(tag string) string {
	switch tag {
	case "str":
		return "string"
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	case "int":
		return "number"
	}
	return tag
}

// docLine is the line where a decoded document's content starts.
func docLine(doc *yaml.Node) int {
	if len(doc.Content) > 0 {
		return doc.Content[0].Line
	}
	return doc.Line
}

// maxAliases bounds the aliases a config may use: a few are handy, thousands are an attack
// (each alias of an alias multiplies the decoded size).
const maxAliases = 100

// checkAliases refuses a config with more aliases than maxAliases, before it is decoded.
func checkAliases(file string, root *yaml.Node) error {
	n, line := 0, 0
	var walk func(*yaml.Node) bool
	walk = func(x *yaml.Node) bool {
		if x.Kind == yaml.AliasNode {
			if n++; n > maxAliases {
				line = x.Line
				return false
			}
			return true // the anchor's own content is walked where it is defined
		}
		for _, c := range x.Content {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	if !walk(root) {
		return &Error{File: file, Line: line, Msg: fmt.Sprintf("more than %d YAML aliases", maxAliases)}
	}
	return nil
}
