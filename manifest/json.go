package manifest

import (
	"fmt"
	"math"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
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

func (d *jdoc) str() (jv, error) {
	b := d.body
	d.pos++ // opening quote
	start := d.pos
	for d.pos < len(b) {
		c := b[d.pos]
		if !strSpecial[c] {
			d.pos++
			continue
		}
		switch {
		case c == '"':
			d.pos++
			return jv{kind: jStr, off: int32(start), end: int32(d.pos - 1)}, nil
		case c == '\\' || c >= utf8.RuneSelf:
			if c >= utf8.RuneSelf {
				if r, n := utf8.DecodeRune(b[d.pos:]); r != utf8.RuneError || n != 1 {
					d.pos += n
					continue
				}
			}
			return d.strSlow(start)
		case c < 0x20:
			return jv{}, d.errf("control character %q in string", c)
		default:
			d.pos++
		}
	}
	return jv{}, d.eof("string")
}

// strSpecial marks the bytes that end the plain scan of a string.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return
}()

// strSlow decodes a string with escapes or invalid UTF-8 into d.esc.
func (d *jdoc) strSlow(start int) (jv, error) {
	b := d.body
	off := len(d.esc)
	d.esc = append(d.esc, b[start:d.pos]...)
	for d.pos < len(b) {
		c := b[d.pos]
		switch {
		case c == '"':
			d.pos++
			return jv{kind: jStr, esc: true, off: int32(off), end: int32(len(d.esc))}, nil
		case c < 0x20:
			return jv{}, d.errf("control character %q in string", c)
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[d.pos:])
			if r == utf8.RuneError && n == 1 {
				d.esc = utf8.AppendRune(d.esc, utf8.RuneError)
			} else {
				d.esc = append(d.esc, b[d.pos:d.pos+n]...)
			}
			d.pos += n
		case c != '\\':
			d.esc = append(d.esc, c)
			d.pos++
		default:
			if d.pos+1 >= len(b) {
				d.pos++
				return jv{}, d.eof("string")
			}
			e := b[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				d.esc = append(d.esc, e)
			case 'b':
				d.esc = append(d.esc, '\b')
			case 'f':
				d.esc = append(d.esc, '\f')
			case 'n':
				d.esc = append(d.esc, '\n')
			case 'r':
				d.esc = append(d.esc, '\r')
			case 't':
				d.esc = append(d.esc, '\t')
			case 'u':
				r, err := d.hex4()
				if err != nil {
					return jv{}, err
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if d.pos+1 < len(b) && b[d.pos] == '\\' && b[d.pos+1] == 'u' {
						save := d.pos
						d.pos += 2
						lo, err := d.hex4()
						if err != nil {
							return jv{}, err
						}
						if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
							r2 = dec
						} else {
							d.pos = save // not a pair: the second escape stands alone
						}
					}
					r = r2
				}
				d.esc = utf8.AppendRune(d.esc, r)
			default:
				d.pos--
				return jv{}, d.errf("invalid escape \\%c in string", e)
			}
		}
	}
	return jv{}, d.eof("string")
}

func (d *jdoc) hex4() (rune, error) {
	if d.pos+4 > len(d.body) {
		d.pos = len(d.body)
		return 0, d.eof("\\u escape")
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := d.body[d.pos+i]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			d.pos += i
			return 0, d.errf("invalid %q in \\u escape", c)
		}
	}
	d.pos += 4
	return r, nil
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

// dedupe finds duplicate keys among stack[base:], records a warning for each and tombstones
// the earlier member, so the last value wins as in encoding/json.
func (d *jdoc) dedupe(base, open int) {
	ms := d.stack[base:]
	if len(ms) < 2 {
		return
	}
	dup := func(i, j int) {
		if len(d.dups) < 20 {
			d.dups = append(d.dups, fmt.Sprintf("duplicate key %q in the object at byte %d: the last value is used", d.bytes(ms[j].key), open))
		}
		ms[i].key.kind = jNone
	}
	if len(ms) <= 8 {
		for j := 1; j < len(ms); j++ {
			for i := 0; i < j; i++ {
				if ms[i].key.kind != jNone && string(d.bytes(ms[i].key)) == string(d.bytes(ms[j].key)) {
					dup(i, j)
				}
			}
		}
		return
	}
	clear(d.seen)
	for j := range ms {
		h := fnv64(d.bytes(ms[j].key))
		if i, ok := d.seen[h]; ok && string(d.bytes(ms[i].key)) == string(d.bytes(ms[j].key)) {
			dup(int(i), j)
		} else if ok {
			// Hash collision between different keys: fall back to a scan for this key.
			for i := 0; i < j; i++ {
				if ms[i].key.kind != jNone && string(d.bytes(ms[i].key)) == string(d.bytes(ms[j].key)) {
					dup(i, j)
				}
			}
			continue
		}
		d.seen[h] = int32(j)
	}
}

func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// bytes returns a string or number value's bytes (valid until d is released).
func (d *jdoc) bytes(v jv) []byte {
	if v.esc {
		return d.esc[v.off:v.end]
	}
	return d.body[v.off:v.end]
}

// str returns a copy of a string value.
func (d *jdoc) string(v jv) string { return string(d.bytes(v)) }

// members returns an object's members or an array's elements; superseded duplicate keys
// have key.kind == jNone and must be skipped by callers iterating objects (use each).
func (d *jdoc) members(v jv) []jkid {
	if v.kind != jObj && v.kind != jArr {
		return nil
	}
	return d.kids[v.off:v.end]
}

// each calls fn for every live member of an object.
func (d *jdoc) each(obj jv, fn func(k, v jv)) {
	if obj.kind != jObj {
		return
	}
	for _, m := range d.kids[obj.off:obj.end] {
		if m.key.kind != jNone {
			fn(m.key, m.val)
		}
	}
}

// get returns the value of key in obj, or a jNone value.
func (d *jdoc) get(obj jv, key string) jv {
	if obj.kind != jObj {
		return jv{}
	}
	for _, m := range d.kids[obj.off:obj.end] {
		if m.key.kind != jNone && string(d.bytes(m.key)) == key {
			return m.val
		}
	}
	return jv{}
}

// len returns the number of live members or elements.
func (d *jdoc) len(v jv) int {
	n := 0
	for _, m := range d.members(v) {
		if v.kind == jArr || m.key.kind != jNone {
			n++
		}
	}
	return n
}
