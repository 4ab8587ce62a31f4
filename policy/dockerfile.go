package policy

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// isDockerfile recognises a Dockerfile: its first instruction (after comments and parser
// directives) is FROM or ARG.
func isDockerfile(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		word, _, _ := strings.Cut(t, " ")
		word, _, _ = strings.Cut(word, "\t")
		word = strings.ToUpper(word)
		return word == "FROM" || word == "ARG"
	}
	return false
}

// dfToken is a word of a logical Dockerfile line with the position of its first character.
type dfToken struct {
	text      string
	line, col int
}

// dfInstruction is one logical instruction (continuation lines joined).
type dfInstruction struct {
	cmd    string // upper case
	tokens []dfToken
}

// parseDockerfile splits a Dockerfile into instructions, handling parser directives (escape),
// comments, line continuations and heredocs.
func parseDockerfile(data []byte) []dfInstruction {
	lines := strings.Split(strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\ufeff"))), "\r\n", "\n"), "\n")
	escape := byte('\\')
	i := 0
	// Parser directives: leading comments of the form "# key=value".
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(t, "#") {
			break
		}
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(t, "#")), "=")
		if !ok {
			break
		}
		if strings.EqualFold(strings.TrimSpace(k), "escape") {
			if v = strings.TrimSpace(v); v == "`" {
				escape = '`'
			}
		}
	}
	var out []dfInstruction
	for i < len(lines) {
		t := strings.TrimSpace(lines[i])
		if t == "" || strings.HasPrefix(t, "#") {
			i++
			continue
		}
		// Gather the logical line.
		var toks []dfToken
		cur := dfToken{}
		inTok := false
		for {
			line := lines[i]
			body := strings.TrimRight(line, " \t")
			cont := len(body) > 0 && body[len(body)-1] == escape
			if cont {
				body = body[:len(body)-1]
			}
			for off := 0; off < len(body); {
				r, size := utf8.DecodeRuneInString(body[off:])
				if r == ' ' || r == '\t' {
					if inTok {
						toks = append(toks, cur)
						inTok = false
					}
				} else {
					if !inTok {
						cur = dfToken{line: i + 1, col: utf8.RuneCountInString(body[:off]) + 1}
						inTok = true
					}
					cur.text += body[off : off+size]
				}
				off += size
			}
			if inTok && !cont {
				toks = append(toks, cur)
				inTok = false
			}
			i++
			if !cont {
				break
			}
			// Comment and empty lines inside a continuation are skipped.
			for i < len(lines) {
				if s := strings.TrimSpace(lines[i]); s == "" || strings.HasPrefix(s, "#") {
					i++
					continue
				}
				break
			}
			if i >= len(lines) {
				if inTok {
					toks = append(toks, cur)
				}
				break
			}
		}
		if len(toks) == 0 {
			continue
		}
		ins := dfInstruction{cmd: strings.ToUpper(toks[0].text), tokens: toks[1:]}
		out = append(out, ins)
		if ins.cmd == "RUN" || ins.cmd == "COPY" || ins.cmd == "ADD" {
			i = skipHeredocs(lines, i, ins.tokens)
		}
	}
	return out
}

// skipHeredocs skips the bodies of the heredocs (<<EOF, <<-EOF, <<"EOF") an instruction opens.
func skipHeredocs(lines []string, i int, toks []dfToken) int {
	for _, t := range toks {
		s := t.text
		for {
			k := strings.Index(s, "<<")
			if k < 0 {
				break
			}
			s = s[k+2:]
			strip := strings.HasPrefix(s, "-")
			s = strings.TrimPrefix(s, "-")
			word := strings.Trim(varNameOrWord(s), `"'`)
			if word == "" {
				continue
			}
			s = s[len(varNameOrWord(s)):]
			for i < len(lines) {
				l := lines[i]
				i++
				if strip {
					l = strings.TrimLeft(l, "\t")
				}
				if strings.TrimRight(l, "\r") == word {
					break
				}
			}
		}
	}
	return i
}

func varNameOrWord(s string) string {
	j := 0
	for j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == '_' || s[j] == '-' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
		j++
	}
	return s[:j]
}

// dockerfileImages returns the images of FROM (with global ARG defaults substituted) and of
// COPY --from=IMAGE. Stage aliases, stage indexes and scratch are not images.
func dockerfileImages(file string, data []byte) ([]Image, error) {
	ins := parseDockerfile(data)
	escape := `\$`
	if strings.Contains(string(data), "escape=`") {
		escape = "`$"
	}
	args := map[string]string{}
	declared := map[string]bool{}
	stages := map[string]bool{}
	seenFrom := false
	stage := 0
	var out []Image
	for _, in := range ins {
		switch in.cmd {
		case "ARG":
			if seenFrom {
				continue
			}
			for _, t := range in.tokens {
				k, v, hasValue := strings.Cut(t.text, "=")
				declared[k] = true
				if hasValue {
					v = unquote(v)
					val, missing := expand(v, args, escape)
					if len(missing) == 0 {
						args[k] = val
					}
				}
			}
		case "FROM":
			seenFrom = true
			stage++
			rest := in.tokens
			for len(rest) > 0 && strings.HasPrefix(rest[0].text, "--") {
				rest = rest[1:]
			}
			if len(rest) == 0 {
				continue
			}
			tok := rest[0]
			alias := ""
			if len(rest) >= 3 && strings.EqualFold(rest[1].text, "AS") {
				alias = strings.ToLower(rest[2].text)
			}
			where := "FROM of stage " + strconv.Itoa(stage)
			if alias != "" {
				where = "FROM of stage " + alias
			}
			if img, ok := dockerImage(file, tok, args, declared, stages, escape, where); ok {
				out = append(out, img)
			}
			if alias != "" {
				stages[alias] = true
			}
		case "COPY":
			for _, t := range in.tokens {
				if !strings.HasPrefix(t.text, "--") {
					break
				}
				v, ok := strings.CutPrefix(t.text, "--from=")
				if !ok || v == "" {
					continue
				}
				if _, err := strconv.Atoi(v); err == nil {
					continue
				}
				t.text = v
				t.col += len("--from=")
				if img, ok := dockerImage(file, t, args, declared, stages, escape, "COPY --from"); ok {
					out = append(out, img)
				}
			}
		}
	}
	return out, nil
}

func dockerImage(file string, tok dfToken, args map[string]string, declared, stages map[string]bool, escape, where string) (Image, bool) {
	img := Image{File: file, Line: tok.line, Column: tok.col, Raw: tok.text, Where: where, Kind: KindDockerfile}
	v, missing := expand(tok.text, args, escape)
	if len(missing) > 0 {
		var why []string
		for _, m := range missing {
			if declared[m] {
				why = append(why, "ARG "+m+" has no default")
			} else {
				why = append(why, "$"+strings.TrimPrefix(m, "$")+" is not a global ARG")
			}
		}
		img.Unresolved = strings.Join(why, "; ")
		return img, true
	}
	l := strings.ToLower(v)
	if l == "scratch" || stages[l] {
		return Image{}, false
	}
	if v == "" {
		img.Unresolved = "the image is empty once ARG defaults are substituted"
		return img, true
	}
	img.Ref = v
	return img, true
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}
