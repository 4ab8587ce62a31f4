package policy

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// dfToken is a word of an instruction, as BuildKit's parser gives it, with the position of its
// first character in the file.
type dfToken struct {
	text      string
	line, col int
	src       *dfLine // the logical line the word is in
	off, end  int     // the byte offsets in src.text where the word was found and where it ends
}

// dfLine is a logical line as BuildKit joins it (continuation characters removed, comment and
// blank lines inside a continuation left out), with where each of its physical pieces is.
type dfLine struct {
	text   string
	pieces []dfPiece
}

// dfPiece is the part of one physical line in a logical line.
type dfPiece struct {
	off  int // byte offset of the piece in the logical line
	line int // 1-based line in the file
	lead int // characters of the physical line before the piece
}

// logicalLine joins the physical lines of the instruction starting at line start (1-based) the
// way BuildKit does.
func logicalLine(lines []string, start int, escape rune) *dfLine {
	l := &dfLine{}
	var b strings.Builder
	for i := start - 1; i < len(lines); i++ {
		raw := strings.TrimRight(lines[i], "\r")
		if i == start-1 {
			raw = strings.TrimLeftFunc(raw, unicode.IsSpace)
		} else if t := strings.TrimSpace(raw); t == "" || t[0] == '#' {
			continue // comment and blank lines inside a continuation
		}
		body := raw
		if t := strings.TrimRight(raw, " \t"); strings.HasSuffix(t, string(escape)) {
			body = strings.TrimSuffix(t, string(escape))
		}
		lead := utf8.RuneCountInString(lines[i][:len(lines[i])-len(strings.TrimLeftFunc(lines[i], unicode.IsSpace))])
		if i > start-1 {
			lead = 0 // continuation lines keep their leading white space
		}
		l.pieces = append(l.pieces, dfPiece{off: b.Len(), line: i + 1, lead: lead})
		b.WriteString(body)
		if body == raw {
			break
		}
	}
	l.text = b.String()
	return l
}

// pos returns the line and column of byte at of the logical line.
func (l *dfLine) pos(at int) (line, col int) {
	if len(l.pieces) == 0 {
		return 0, 0
	}
	k := sort.Search(len(l.pieces), func(k int) bool { return l.pieces[k].off > at }) - 1
	p := l.pieces[max(k, 0)]
	return p.line, p.lead + utf8.RuneCountInString(l.text[p.off:at]) + 1
}

// find returns the word w at its first occurrence in the line at or after byte off. BuildKit
// removes quotes and escapes from flags: a word not found as written is placed at its first
// character in the next word of the line, or else at that word's start.
func (l *dfLine) find(w string, off int) dfToken {
	off = min(off, len(l.text))
	at := off
	r, _ := utf8.DecodeRuneInString(w)
	end := 0
	if k := strings.Index(l.text[off:], w); k >= 0 && w != "" {
		at = off + k
		end = at + len(w)
	} else {
		at = wordStart(l.text, off)
		end = skipWord(l.text, at)
		if k := strings.IndexRune(l.text[at:end], r); k >= 0 && w != "" {
			at += k // the word's first character, past an opening quote
		}
	}
	if at >= len(l.text) && at > 0 {
		at = len(l.text) - 1 // a word BuildKit saw must be somewhere: place it at the end
	}
	t := dfToken{text: w, src: l, off: at, end: max(end, at)}
	t.line, t.col = l.pos(at)
	return t
}

// sub returns the part v of the word t, found at or after the byte offset from within it.
func (t dfToken) sub(v string, from int) dfToken {
	if t.src == nil {
		return dfToken{text: v, line: t.line, col: t.col}
	}
	return t.src.find(v, t.off+from)
}

// wordStart returns the offset of the first byte at or after off that is not a separator
// between words, as BuildKit separates them.
func wordStart(s string, off int) int {
	for off < len(s) && isDfSpace(s[off]) {
		off++
	}
	return off
}

// skipWord returns the offset of the first separator at or after off.
func skipWord(s string, off int) int {
	for off < len(s) && !isDfSpace(s[off]) {
		off++
	}
	return off
}

func isDfSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\v' || b == '\f' || b == '\r'
}
