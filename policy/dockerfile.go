package policy

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// isDockerfile recognises a Dockerfile: its first instruction (after comments and parser
// directives) is FROM or ARG.
func isDockerfile(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		word := strings.ToUpper(t[:skipWord(t, 0)])
		return word == "FROM" || word == "ARG"
	}
	return false
}

// dfInstruction is one instruction: for FROM and ARG its arguments, for COPY and RUN its
// flags.
type dfInstruction struct {
	cmd    string // upper case
	tokens []dfToken
}

// parseDockerfile parses a Dockerfile with BuildKit's parser, which decides what an instruction
// is (parser directives, the escape character, line continuations, heredocs, flags), and maps
// the words of the instructions polygraph reads back to their positions in the file.
func parseDockerfile(data []byte) ([]dfInstruction, error) {
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(bytes.TrimPrefix(data, []byte("\ufeff"))), "\n")
	var out []dfInstruction
	for _, n := range res.AST.Children {
		cmd := strings.ToUpper(n.Value)
		var words []string
		switch cmd {
		case "FROM", "ARG":
			for a := n.Next; a != nil; a = a.Next {
				words = append(words, a.Value)
			}
		case "COPY", "RUN":
			for _, f := range n.Flags {
				words = append(words, flagBytes(f))
			}
		default:
			continue
		}
		src := logicalLine(lines, n.StartLine, res.EscapeToken)
		ins := dfInstruction{cmd: cmd}
		off := wordStart(src.text, 0) // after the instruction's name
		off = skipWord(src.text, off)
		for _, w := range words {
			t := src.find(w, off)
			ins.tokens = append(ins.tokens, t)
			off = t.end
		}
		out = append(out, ins)
	}
	return out, nil
}

// flagBytes undoes what BuildKit's flag reader does to text that is not ASCII: it reads the
// line a byte at a time and writes each byte back as a rune (U+0000 to U+00FF), so "Ҁ" (two
// bytes) comes back as "Ò\u0080". Turning each such rune back into its byte restores the text
// as written.
func flagBytes(f string) string {
	b := make([]byte, 0, len(f))
	for _, r := range f {
		if r > 0xff {
			return f // not produced by that reader: leave it
		}
		b = append(b, byte(r))
	}
	if !utf8.Valid(b) {
		return f
	}
	return string(b)
}

// dockerfileImages returns the images of FROM (with global ARG defaults substituted) and of
// COPY --from=IMAGE. Stage aliases, stage indexes and scratch are not images. Once expansion
// hits a limit (MaxExpandDepth, MaxExpandBytes), every later image is unreadable, naming the
// line where the limit was hit; an ended context stops the parse with its error.
func dockerfileImages(ctx context.Context, file string, data []byte) ([]Image, error) {
	ins, err := parseDockerfile(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", file, err)
	}
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
				d.image(t.sub(v, len("--from=")), "COPY --from", d.allStages)
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
	for _, kv := range strings.Split(opts, ",") {
		if v, ok := strings.CutPrefix(kv, "from="); ok && v != "" {
			return t.sub(v, len("--mount=")+strings.Index(opts, kv)+len("from=")), true
		}
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
