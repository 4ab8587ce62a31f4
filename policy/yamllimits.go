package policy

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Limits on what one YAML document may make the extractors walk. Aliases are not expanded when
// a document is decoded, but every lookup that follows them walks the aliased content again:
// a few lines of aliases of aliases (the "billion laughs") would make that exponential.
const (
	// MaxMergeDepth bounds chains of << merge keys (a mapping merging one that merges ...).
	MaxMergeDepth = 32
	// MaxYAMLNodes bounds the nodes of one document with every alias counted as the content it
	// stands for.
	MaxYAMLNodes = 1 << 20
)

// docLimits reports why a document cannot be read within the limits, and the node where a
// limit is hit; "" when it can. It visits each node once.
type docLimits struct {
	size   map[*yaml.Node]int
	merge  map[*yaml.Node]int
	active map[*yaml.Node]bool
	reason string
	at     *yaml.Node
}

func checkDoc(doc *yaml.Node) (string, *yaml.Node) {
	l := &docLimits{size: map[*yaml.Node]int{}, merge: map[*yaml.Node]int{}, active: map[*yaml.Node]bool{}}
	if n := l.count(doc); l.reason == "" && n > MaxYAMLNodes {
		l.reason, l.at = fmt.Sprintf("its aliases expand to more than %d nodes", MaxYAMLNodes), doc
	}
	return l.reason, l.at
}

// count returns the expanded node count of n (saturating just past MaxYAMLNodes) and checks
// the merge depth of every mapping.
func (l *docLimits) count(n *yaml.Node) int {
	if n == nil || l.reason != "" {
		return 0
	}
	if s, ok := l.size[n]; ok {
		return s
	}
	if l.active[n] {
		l.reason, l.at = "an alias refers to the node that contains it", n
		return 0
	}
	l.active[n] = true
	defer delete(l.active, n)
	total := 1
	if n.Kind == yaml.AliasNode {
		total = l.count(n.Alias)
	}
	for _, c := range n.Content {
		total += l.count(c)
		if total > MaxYAMLNodes {
			if l.reason == "" {
				l.reason, l.at = fmt.Sprintf("its aliases expand to more than %d nodes", MaxYAMLNodes), c
			}
			total = MaxYAMLNodes + 1
		}
	}
	if n.Kind == yaml.MappingNode && l.reason == "" {
		if d := l.mergeDepth(n); d > MaxMergeDepth && l.reason == "" {
			l.reason, l.at = fmt.Sprintf("its << merge keys are chained more than %d deep", MaxMergeDepth), n
		}
	}
	l.size[n] = total
	return total
}

// mergeDepth returns the length of the longest chain of << merges starting at mapping n.
func (l *docLimits) mergeDepth(n *yaml.Node) int {
	if d, ok := l.merge[n]; ok {
		return d
	}
	l.merge[n] = 0 // a cycle (already reported by count) ends here
	depth := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Tag != "!!merge" {
			continue
		}
		for _, m := range mergedMaps(n.Content[i+1]) {
			if d := 1 + l.mergeDepth(m); d > depth {
				depth = d
			}
		}
	}
	l.merge[n] = depth
	return depth
}

// mergedMaps returns the mappings a << value merges: one mapping, or a sequence of them.
func mergedMaps(v *yaml.Node) []*yaml.Node {
	v = deref(v)
	var out []*yaml.Node
	if v != nil && v.Kind == yaml.SequenceNode {
		for _, m := range v.Content {
			if m = deref(m); m != nil && m.Kind == yaml.MappingNode {
				out = append(out, m)
			}
		}
	} else if v != nil && v.Kind == yaml.MappingNode {
		out = append(out, v)
	}
	return out
}

// unreadable is the Image standing for content polygraph could not read: a finding, never a
// silent drop.
func unreadable(file string, kind Kind, where string, at *yaml.Node, why string) Image {
	line, col := 1, 1
	if at != nil && at.Line > 0 {
		line, col = at.Line, max(at.Column, 1)
	}
	return Image{File: file, Line: line, Column: col, Where: where, Kind: kind, Unreadable: why}
}
