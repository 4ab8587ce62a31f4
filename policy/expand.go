package policy

import (
	"context"
	"fmt"
	"strings"
)

// Limits on variable expansion. A few lines of ARG B=$A$A doubling, or ${A:-${B:-...}} nested
// thousands deep, must not take gigabytes or minutes: past a limit the value is unreadable, a
// finding, never a guess.
const (
	// MaxExpandDepth bounds how deeply ${...} may nest inside defaults and alternatives.
	MaxExpandDepth = 32
	// MaxExpandBytes bounds the bytes all expansions of one file may produce together, beyond
	// the size of the file itself.
	MaxExpandBytes = 1 << 20
)

// expander substitutes variables under a shared budget. After the first limit is hit (or the
// context ends) every further expansion fails with the same error.
type expander struct {
	ctx    context.Context
	vars   map[string]string
	escape string
	budget int
	err    error
}

// newExpander returns an expander for a file of size bytes.
func newExpander(ctx context.Context, vars map[string]string, escape string, size int) *expander {
	return &expander{ctx: ctx, vars: vars, escape: escape, budget: MaxExpandBytes + size}
}

// expand substitutes ${VAR}, $VAR, ${VAR:-word}, ${VAR-word}, ${VAR:+word}, ${VAR+word},
// ${VAR:?msg} and ${VAR?msg} in s from vars, where a variable missing from vars is unset. escape
// is the sequence that stands for a literal dollar ("$$" in compose, `\$` in a Dockerfile). It
// returns the names of the variables whose value is needed but unknown; when there are any, the
// result is not a usable value. It is the unbounded-context form used by tests; Extract uses an
// expander.
func expand(s string, vars map[string]string, escape string) (string, []string) {
	e := newExpander(context.Background(), vars, escape, len(s))
	v, missing, _ := e.expand(s)
	return v, missing
}

// expand is expand under the expander's limits: a non-nil error means the value could not be
// read (too deep, too large, or the context ended).
func (e *expander) expand(s string) (string, []string, error) {
	if e.err == nil {
		e.err = e.ctx.Err()
	}
	if e.err != nil {
		return "", nil, e.err
	}
	var b strings.Builder
	missing := e.expandInto(&b, s, 0)
	if e.err != nil {
		return "", nil, e.err
	}
	return b.String(), missing, nil
}

// write appends s to b, charging the budget.
func (e *expander) write(b *strings.Builder, s string) bool {
	if e.err != nil {
		return false
	}
	if len(s) > e.budget {
		e.err = fmt.Errorf("variable expansion produces more than %d KiB", MaxExpandBytes>>10)
		return false
	}
	e.budget -= len(s)
	b.WriteString(s)
	return true
}

func (e *expander) expandInto(b *strings.Builder, s string, depth int) []string {
	if depth > MaxExpandDepth {
		e.err = fmt.Errorf("variables nested more than %d deep", MaxExpandDepth)
		return nil
	}
	var missing []string
	for i := 0; i < len(s) && e.err == nil; {
		if e.escape != "" && strings.HasPrefix(s[i:], e.escape) {
			e.write(b, "$")
			i += len(e.escape)
			continue
		}
		if s[i] != '$' || i+1 >= len(s) {
			e.write(b, s[i:i+1])
			i++
			continue
		}
		if s[i+1] != '{' {
			n := varName(s[i+1:])
			if n == "" {
				e.write(b, "$")
				i++
				continue
			}
			if v, ok := e.vars[n]; ok {
				e.write(b, v)
			} else {
				missing = append(missing, n)
			}
			i += 1 + len(n)
			continue
		}
		end := closingBrace(s, i+2)
		if end < 0 {
			missing = append(missing, s[i:])
			break
		}
		inner := s[i+2 : end]
		i = end + 1
		n := varName(inner)
		if n == "" {
			missing = append(missing, "${"+inner+"}")
			continue
		}
		v, set := e.vars[n]
		rest := inner[len(n):]
		op, word := "", ""
		for _, o := range []string{":-", ":?", ":+", "-", "?", "+"} {
			if strings.HasPrefix(rest, o) {
				op, word = o, rest[len(o):]
				break
			}
		}
		if op == "" && rest != "" {
			missing = append(missing, "${"+inner+"}")
			continue
		}
		nonEmpty := set && v != ""
		useVar := set
		if strings.HasPrefix(op, ":") {
			useVar = nonEmpty
		}
		switch op {
		case "":
			if !set {
				missing = append(missing, n)
			}
			e.write(b, v)
		case ":-", "-":
			if useVar {
				e.write(b, v)
			} else {
				missing = append(missing, e.expandInto(b, word, depth+1)...)
			}
		case ":?", "?":
			if !useVar {
				missing = append(missing, n)
			}
			e.write(b, v)
		case ":+", "+":
			if useVar {
				missing = append(missing, e.expandInto(b, word, depth+1)...)
			}
		}
	}
	return missing
}

// varName returns the variable name at the start of s.
func varName(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			i++
			continue
		}
		break
	}
	return s[:i]
}

// closingBrace returns the index of the } closing a ${ whose content starts at from, or -1.
func closingBrace(s string, from int) int {
	depth := 0
	for j := from; j < len(s); j++ {
		switch s[j] {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return j
			}
			depth--
		}
	}
	return -1
}
