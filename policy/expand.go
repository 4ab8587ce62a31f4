package policy

import "strings"

// expand substitutes ${VAR}, $VAR, ${VAR:-word}, ${VAR-word}, ${VAR:+word}, ${VAR+word},
// ${VAR:?msg} and ${VAR?msg} in s from vars, where a variable missing from vars is unset. escape
// is the sequence that stands for a literal dollar ("$$" in compose, `\$` in a Dockerfile). It
// returns the names of the variables whose value is needed but unknown; when there are any, the
// result is not a usable value.
func expand(s string, vars map[string]string, escape string) (string, []string) {
	var b strings.Builder
	var missing []string
	for i := 0; i < len(s); {
		if escape != "" && strings.HasPrefix(s[i:], escape) {
			b.WriteByte('$')
			i += len(escape)
			continue
		}
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		if s[i+1] != '{' {
			n := varName(s[i+1:])
			if n == "" {
				b.WriteByte('$')
				i++
				continue
			}
			if v, ok := vars[n]; ok {
				b.WriteString(v)
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
		v, set := vars[n]
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
			b.WriteString(v)
		case ":-", "-":
			if useVar {
				b.WriteString(v)
			} else {
				w, m := expand(word, vars, escape)
				b.WriteString(w)
				missing = append(missing, m...)
			}
		case ":?", "?":
			if !useVar {
				missing = append(missing, n)
			}
			b.WriteString(v)
		case ":+", "+":
			if useVar {
				w, m := expand(word, vars, escape)
				b.WriteString(w)
				missing = append(missing, m...)
			}
		}
	}
	return b.String(), missing
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
