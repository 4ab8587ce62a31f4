package manifest

import (
	"unicode/utf16"
	"unicode/utf8"
)

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
