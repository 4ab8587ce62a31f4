package config

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// numbers refuses .nan and .inf anywhere: no setting means "not a number", and comparisons
// with NaN are all false, so it would slip through every range check.
func (v *validator) numbers(n *yaml.Node, path string) {
	if n == nil || v.err != nil {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			v.numbers(c, path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			v.numbers(n.Content[i+1], join(path, n.Content[i].Value))
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			v.numbers(c, join(path, fmt.Sprint(i)))
		}
	case yaml.ScalarNode:
		if n.ShortTag() != "!!float" {
			return
		}
		switch strings.ToLower(strings.TrimLeft(n.Value, "+-")) {
		case ".nan", ".inf":
			v.err = &Error{File: v.cfg.File, Line: n.Line, Msg: fmt.Sprintf("%s must be a finite number, got %s", path, n.Value)}
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// node returns the value node at a dotted key path, nil when the key is absent.
func (v *validator) node(path string) *yaml.Node {
	n := v.root
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	for _, part := range strings.Split(path, ".") {
		for n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

func (v *validator) present(path string) bool { return v.node(path) != nil }

// scalar returns the value of the scalar at path as written ("" when absent or not a scalar).
func (v *validator) scalar(path string) string {
	n := v.node(path)
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// positive refuses a duration written as zero: a default that silently replaces an explicit
// 0 would be a setting accepted and ignored. (Negative durations fail at decoding.)
func (v *validator) positive(path string) {
	s := v.scalar(path)
	if s == "" {
		return
	}
	if d, err := time.ParseDuration(s); err == nil && d == 0 {
		v.fail(path, "%s must be positive, got %s (leave it out for the default)", path, s)
	}
}

// headers refuses header names that are not HTTP tokens and values holding control characters
// (CR LF would inject headers of its own into every request).
func (v *validator) headers() {
	c := v.cfg
	for name, value := range c.Probe.Headers {
		path := "probe.headers." + name
		if !validHeaderName(name) {
			v.fail(path, "probe.headers: %q is not a valid header name", name)
		}
		if hasControl(value) {
			v.fail(path, "probe.headers: the value of %s holds a control character (%q)", name, value)
		}
	}
	for _, h := range []struct{ path, name string }{
		{"probe.version.header", c.Probe.Version.Header},
		{"probe.digest.header", c.Probe.Digest.Header},
	} {
		if h.name != "" && !validHeaderName(h.name) {
			v.fail(h.path, "%s: %q is not a valid header name", h.path, h.name)
		}
	}
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 §5.6.2).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// hasControl reports whether s holds a control character other than a tab.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return true
		}
	}
	return false
}
