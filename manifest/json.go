package manifest

import (
	"fmt"
	"math"
	"sync"
)

// A small single-pass JSON decoder. Manifests are decoded exactly once, into a flat tree whose
// strings are offsets into the body (or into an unescape buffer), so detection and parsing
// share one decode and a 25 KB manifest costs a handful of allocations. It follows RFC 8259
// and encoding/json's choices: invalid UTF-8 and lone surrogates become U+FFFD, and of
// duplicate object keys the last wins (reported as a warning).

type jkind uint8

const (
	jNone jkind = iota // absent, or a key superseded by a later duplicate
	jNull
	jFalse
	jTrue
	jNum
	jStr
	jArr
	jObj
)

func (k jkind) String() string {
	return [...]string{"nothing", "null", "false", "true", "a number", "a string", "an array", "an object"}[k]
}

// jv is one JSON value. Strings and numbers are a byte range (in doc.esc when esc is set,
// else in the body); arrays and objects are a range of doc.kids.
type jv struct {
	kind     jkind
	esc      bool
	off, end int32
}

// jkid is an object member (key set) or an array element (key.kind == jNone).
type jkid struct {
	key jv
	val jv
}

const maxDepth = 1000

type jdoc struct {
	body  []byte
	esc   []byte
	kids  []jkid
	stack []jkid
	seen  map[uint64]int32
	dups  []string
	pos   int
	depth int
}

var jdocPool = sync.Pool{New: func() any { return &jdoc{seen: map[uint64]int32{}} }}

func getDoc() *jdoc { return jdocPool.Get().(*jdoc) }

// release returns d to the pool; nothing decoded from d may be used after it.
func (d *jdoc) release() {
	if cap(d.kids) > 1<<16 || cap(d.esc) > 1<<20 || len(d.seen) > 1<<12 {
		return // don't pin the buffers of a huge manifest
	}
	d.body, d.esc, d.kids, d.stack, d.dups = nil, d.esc[:0], d.kids[:0], d.stack[:0], nil
	clear(d.seen)
	jdocPool.Put(d)
}

// jsonError is a syntax error at a byte offset.
type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return fmt.Sprintf("invalid JSON at byte %d: %s", e.off, e.msg) }

// decode parses body into d and returns the root value.
func (d *jdoc) decode(body []byte) (jv, error) {
	if len(body) > math.MaxInt32 {
		return jv{}, &jsonError{0, "document larger than 2 GiB"}
	}
	d.body, d.pos, d.depth = body, 0, 0
	d.esc, d.kids, d.stack, d.dups = d.esc[:0], d.kids[:0], d.stack[:0], nil
	v, err := d.value()
	if err != nil {
		return jv{}, err
	}
	d.ws()
	if d.pos < len(d.body) {
		return jv{}, d.errf("unexpected %q after the top-level value", d.body[d.pos])
	}
	return v, nil
}

func (d *jdoc) errf(format string, args ...any) error {
	return &jsonError{d.pos, fmt.Sprintf(format, args...)}
}

func (d *jdoc) eof(what string) error {
	return &jsonError{d.pos, "unexpected end of input in " + what + " (truncated?)"}
}

func (d *jdoc) ws() {
	for d.pos < len(d.body) {
		switch d.body[d.pos] {
		case ' ', '\t', '\r', '\n':
			d.pos++
		default:
			return
		}
	}
}

func (d *jdoc) value() (jv, error) {
	d.ws()
	if d.pos >= len(d.body) {
		return jv{}, d.eof("value")
	}
	switch c := d.body[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return d.lit("true", jTrue)
	case c == 'f':
		return d.lit("false", jFalse)
	case c == 'n':
		return d.lit("null", jNull)
	default:
		return jv{}, d.errf("unexpected %q looking for a value", c)
	}
}

func (d *jdoc) lit(word string, k jkind) (jv, error) {
	for i := 0; i < len(word); i++ {
		if d.pos+i >= len(d.body) {
			d.pos += i
			return jv{}, d.eof("literal " + word)
		}
		if d.body[d.pos+i] != word[i] {
			d.pos += i
			return jv{}, d.errf("unexpected %q in literal %s", d.body[d.pos], word)
		}
	}
	d.pos += len(word)
	return jv{kind: k}, nil
}

func (d *jdoc) number() (jv, error) {
	start := d.pos
	b := d.body
	digits := func() int {
		n := 0
		for d.pos < len(b) && b[d.pos] >= '0' && b[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if b[d.pos] == '-' {
		d.pos++
	}
	if d.pos >= len(b) {
		return jv{}, d.eof("number")
	}
	if b[d.pos] == '0' {
		d.pos++
	} else if digits() == 0 {
		return jv{}, d.errf("unexpected %q in number", b[d.pos])
	}
	if d.pos < len(b) && b[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			if d.pos >= len(b) {
				return jv{}, d.eof("number")
			}
			return jv{}, d.errf("unexpected %q after decimal point", b[d.pos])
		}
	}
	if d.pos < len(b) && (b[d.pos] == 'e' || b[d.pos] == 'E') {
		d.pos++
		if d.pos < len(b) && (b[d.pos] == '+' || b[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			if d.pos >= len(b) {
				return jv{}, d.eof("number")
			}
			return jv{}, d.errf("unexpected %q in exponent", b[d.pos])
		}
	}
	return jv{kind: jNum, off: int32(start), end: int32(d.pos)}, nil
}

func (d *jdoc) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return d.errf("nested deeper than %d levels", maxDepth)
	}
	return nil
}

func (d *jdoc) array() (jv, error) {
	if err := d.enter(); err != nil {
		return jv{}, err
	}
	d.pos++
	base := len(d.stack)
	d.ws()
	if d.pos < len(d.body) && d.body[d.pos] == ']' {
		d.pos++
		d.depth--
		return d.close(jArr, base), nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return jv{}, err
		}
		d.stack = append(d.stack, jkid{val: v})
		d.ws()
		if d.pos >= len(d.body) {
			return jv{}, d.eof("array")
		}
		switch d.body[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.depth--
			return d.close(jArr, base), nil
		default:
			return jv{}, d.errf("unexpected %q in array, expected ',' or ']'", d.body[d.pos])
		}
	}
}

func (d *jdoc) object() (jv, error) {
	if err := d.enter(); err != nil {
		return jv{}, err
	}
	open := d.pos
	d.pos++
	base := len(d.stack)
	d.ws()
	if d.pos < len(d.body) && d.body[d.pos] == '}' {
		d.pos++
		d.depth--
		return d.close(jObj, base), nil
	}
	for {
		d.ws()
		if d.pos >= len(d.body) {
			return jv{}, d.eof("object")
		}
		if d.body[d.pos] != '"' {
			return jv{}, d.errf("unexpected %q in object, expected a key", d.body[d.pos])
		}
		k, err := d.str()
		if err != nil {
			return jv{}, err
		}
		d.ws()
		if d.pos >= len(d.body) {
			return jv{}, d.eof("object")
		}
		if d.body[d.pos] != ':' {
			return jv{}, d.errf("unexpected %q after object key, expected ':'", d.body[d.pos])
		}
		d.pos++
		v, err := d.value()
		if err != nil {
			return jv{}, err
		}
		d.stack = append(d.stack, jkid{key: k, val: v})
		d.ws()
		if d.pos >= len(d.body) {
			return jv{}, d.eof("object")
		}
		switch d.body[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			d.dedupe(base, open)
			return d.close(jObj, base), nil
		default:
			return jv{}, d.errf("unexpected %q in object, expected ',' or '}'", d.body[d.pos])
		}
	}
}

// close moves the members pushed since base into kids, contiguously.
func (d *jdoc) close(k jkind, base int) jv {
	off := len(d.kids)
	d.kids = append(d.kids, d.stack[base:]...)
	d.stack = d.stack[:base]
	return jv{kind: k, off: int32(off), end: int32(len(d.kids))}
}
