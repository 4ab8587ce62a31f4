package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as "5s", "10m", "336h".
type Duration time.Duration

// UnmarshalYAML decodes a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &lineError{n.Line, "expected a duration such as 5s or 10m"}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return &lineError{n.Line, fmt.Sprintf("invalid duration %q (use a unit: 500ms, 5s, 10m, 336h)", n.Value)}
	}
	if v < 0 {
		return &lineError{n.Line, fmt.Sprintf("duration %q must not be negative", n.Value)}
	}
	*d = Duration(v)
	return nil
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// ByteSize is a size in bytes, written as a number or with a unit: 16MiB, 512KiB, 1GB.
type ByteSize int64

// UnmarshalYAML decodes a byte size.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return &lineError{n.Line, fmt.Sprintf("invalid size %q (use bytes or a unit: 512KiB, 16MiB)", n.Value)}
	}
	*b = ByteSize(v)
	return nil
}

// ParseByteSize parses "16MiB", "512KiB", "1GB", "1024".
func ParseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return v * mult, nil
}

// Date is a calendar date written as 2027-01-01.
type Date struct{ time.Time }

// UnmarshalYAML decodes a YYYY-MM-DD date.
func (d *Date) UnmarshalYAML(n *yaml.Node) error {
	t, err := time.Parse("2006-01-02", n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return &lineError{n.Line, fmt.Sprintf("invalid date %q (use YYYY-MM-DD)", n.Value)}
	}
	d.Time = t
	return nil
}

// UnmarshalYAML records the exception's line.
func (e *Exception) UnmarshalYAML(n *yaml.Node) error {
	type plain Exception
	var p plain
	if err := decodeStrict(n, &p, "policy.exceptions"); err != nil {
		return err
	}
	*e = Exception(p)
	e.Line = n.Line
	return nil
}

// decodeStrict decodes a node rejecting unknown keys (Node.Decode alone does not).
func decodeStrict(n *yaml.Node, v any, section string) error {
	if n.Kind == yaml.MappingNode {
		known := yamlKeys(v)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if !known[k.Value] {
				return &lineError{k.Line, fmt.Sprintf("unknown key %q in %s", k.Value, section)}
			}
		}
	}
	return n.Decode(v)
}

type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// Files is release.manifest_file: one absolute path inside the image, or a list of them, one
// per probe.manifest.paths entry and in the same order. An empty string (or null) is no file.
type Files []string

// UnmarshalYAML decodes a path or a list of paths.
func (f *Files) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*f = nil
		if n.Value != "" {
			*f = Files{n.Value}
		}
		return nil
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return &lineError{n.Line, "release.manifest_file is an empty list: leave it out, or list one file per probe.manifest.paths entry"}
		}
		out := make(Files, 0, len(n.Content))
		for i, e := range n.Content {
			if e.Kind != yaml.ScalarNode {
				return &lineError{e.Line, fmt.Sprintf("release.manifest_file entry %d: expected a path inside the image", i+1)}
			}
			out = append(out, e.Value)
		}
		*f = out
		return nil
	}
	return &lineError{n.Line, "release.manifest_file: expected a path inside the image or a list of them"}
}
