package policy

import (
	"bytes"
	"context"
	"fmt"
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
		var text strings.Builder // of cur: a long token must not be built by repeated +=
		inTok := false
		for {
			line := lines[i]
			body := strings.TrimRight(line, " \t")
			cont := len(body) > 0 && body[len(body)-1] == escape
			if cont {
				body = body[:len(body)-1]
			}
			for off, runes := 0, 0; off < len(body); runes++ {
				r, size := utf8.DecodeRuneInString(body[off:])
				if r == ' ' || r == '\t' {
					if inTok {
						cur.text = text.String()
						toks = append(toks, cur)
						inTok = false
					}
				} else {
					if !inTok {
						cur = dfToken{line: i + 1, col: runes + 1}
						text.Reset()
						inTok = true
					}
					text.WriteString(body[off : off+size])
				}
				off += size
			}
			if inTok && !cont {
				cur.text = text.String()
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
					cur.text = text.String()
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
// COPY --from=IMAGE. Stage aliases, stage indexes and scratch are not images. Once expansion
// hits a limit (MaxExpandDepth, MaxExpandBytes), every later image is unreadable, naming the
// line where the limit was hit; an ended context stops the parse with its error.
func dockerfileImages(ctx context.Context, file string, data []byte) ([]Image, error) {
	ins := parseDockerfile(data)
	escape := `\$`
	if strings.Contains(string(data), "escape=`") {
		escape = "`$"
	}
	args := map[string]string{}
	e := newExpander(ctx, args, escape, len(data))
	d := &dfImages{file: file, e: e, declared: map[string]bool{}, stages: map[string]bool{}, allStages: map[string]bool{}}
	for _, in := range ins {
		// COPY --from and RUN --mount from= resolve against every stage, even one defined later.
		if in.cmd == "FROM" && len(in.tokens) >= 3 {
			rest := in.tokens
			for len(rest) > 0 && strings.HasPrefix(rest[0].text, "--") {
				rest = rest[1:]
			}
			if len(rest) >= 3 && strings.EqualFold(rest[1].text, "AS") {
				d.allStages[strings.ToLower(rest[2].text)] = true
			}
		}
	}
	seenFrom := false
	stage := 0
	for _, in := range ins {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		switch in.cmd {
		case "ARG":
			if seenFrom {
				continue
			}
			for _, t := range in.tokens {
				k, v, hasValue := strings.Cut(t.text, "=")
				d.declared[k] = true
				if hasValue && d.limit == "" {
					val, missing, err := e.expand(unquote(v))
					if err != nil {
						d.fail(t, err)
						continue
					}
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
			d.image(tok, where, d.stages)
			if alias != "" {
				d.stages[alias] = true
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
				d.image(t, "COPY --from", d.allStages)
			}
		case "RUN":
			for _, t := range in.tokens {
				if !strings.HasPrefix(t.text, "--") {
					break
				}
				if tok, ok := mountFrom(t); ok {
					d.image(tok, "RUN --mount from", d.allStages)
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.out, nil
}

// dfImages collects a Dockerfile's images.
type dfImages struct {
	file      string
	e         *expander
	declared  map[string]bool
	stages    map[string]bool // defined so far, which FROM may name
	allStages map[string]bool // defined anywhere, which COPY --from and RUN --mount may name
	limit     string          // why expansion stopped, with the line, once a limit was hit
	out       []Image
}

// platformArgs are the build args BuildKit predefines: a FROM using one depends on the build.
var platformArgs = map[string]bool{
	"TARGETPLATFORM": true, "TARGETOS": true, "TARGETARCH": true, "TARGETVARIANT": true,
	"BUILDPLATFORM": true, "BUILDOS": true, "BUILDARCH": true, "BUILDVARIANT": true,
}

// mountFrom returns the from= value of a RUN --mount flag as a token of its own.
func mountFrom(t dfToken) (dfToken, bool) {
	opts, ok := strings.CutPrefix(t.text, "--mount=")
	if !ok {
		return dfToken{}, false
	}
	off := len("--mount=")
	for _, kv := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(kv, "from="); ok && v != "" {
			col := t.col + utf8.RuneCountInString(t.text[:off+len("from=")])
			return dfToken{text: v, line: t.line, col: col}, true
		}
		off += len(kv) + 1
	}
	return dfToken{}, false
}

// undeclaredOnly reports whether every missing variable is a plain name declared nowhere and
// not predefined by BuildKit.
func (d *dfImages) undeclaredOnly(missing []string) bool {
	for _, m := range missing {
		if strings.HasPrefix(m, "$") || d.declared[m] || platformArgs[m] {
			return false
		}
	}
	return true
}

// fail records the first expansion limit hit, at tok.
func (d *dfImages) fail(tok dfToken, err error) {
	if d.limit == "" {
		d.limit = fmt.Sprintf("%v (line %d)", err, tok.line)
	}
}

// image adds the image named by tok, unless it is scratch or a stage.
func (d *dfImages) image(tok dfToken, where string, stages map[string]bool) {
	img := Image{File: d.file, Line: tok.line, Column: tok.col, Raw: tok.text, Where: where, Kind: KindDockerfile}
	if d.limit != "" {
		img.Unreadable = d.limit
		d.out = append(d.out, img)
		return
	}
	v, missing, err := d.e.expand(tok.text)
	if err == nil && len(missing) > 0 && d.undeclaredOnly(missing) {
		// BuildKit expands a variable declared nowhere to the empty string (FROM alpine$TAG
		// is alpine, that is alpine:latest).
		vars := make(map[string]string, len(d.e.vars)+len(missing))
		for k, val := range d.e.vars {
			vars[k] = val
		}
		for _, m := range missing {
			vars[m] = ""
		}
		saved := d.e.vars
		d.e.vars = vars
		v, missing, err = d.e.expand(tok.text)
		d.e.vars = saved
	}
	if err != nil {
		d.fail(tok, err)
		img.Unreadable = d.limit
		d.out = append(d.out, img)
		return
	}
	if len(missing) > 0 {
		var why []string
		for _, m := range missing {
			switch {
			case d.declared[m]:
				why = append(why, "ARG "+m+" has no default")
			case platformArgs[m]:
				why = append(why, "$"+m+" is set by the builder for each platform")
			default:
				why = append(why, "$"+strings.TrimPrefix(m, "$")+" is not a global ARG")
			}
		}
		img.Unresolved = strings.Join(why, "; ")
		d.out = append(d.out, img)
		return
	}
	l := strings.ToLower(v)
	if l == "scratch" || stages[l] {
		return
	}
	if v == "" {
		img.Unresolved = "the image is empty once ARG defaults are substituted"
	} else {
		img.Ref = v
	}
	d.out = append(d.out, img)
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}
