package manifest

import "fmt"

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
