package manifest

import (
	"bytes"
	"net/url"
)

// mix is Laravel Mix's mix-manifest.json: {"/js/app.js": "/js/app.js?id=<md5>"}, paths
// relative to the public directory, served from the site root (Mix never applies a CDN
// prefix). The ?id= query is kept in the ref (it is the version the CDN must key on) and,
// being the md5 of the file (Mix 6: 32 hex digits; Mix up to 5: the first 20), becomes the
// asset's integrity "md5:<hex>".
type mix struct{}

func init() { register(mix{}) }

func (mix) format() Format { return "mix" }

func (mix) detect(in *input) bool {
	d := in.doc
	if in.name == "mix-manifest.json" {
		return mostlyStrings(d, in.root)
	}
	ok := true
	d.each(in.root, func(k, v jv) {
		key := d.bytes(k)
		ok = ok && v.kind == jStr && len(key) > 1 && key[0] == '/' && bytes.HasPrefix(d.bytes(v), key) &&
			(len(d.bytes(v)) == len(key) || d.bytes(v)[len(key)] == '?')
	})
	return ok && d.len(in.root) > 0
}

func (mix) parse(in *input, r *resolver) error {
	d := in.doc
	d.each(in.root, func(k, v jv) {
		if v.kind != jStr {
			r.skipKey(d, k, v)
			return
		}
		val := d.bytes(v)
		var integ []byte
		if i := bytes.IndexByte(val, '?'); i >= 0 {
			if q, err := url.ParseQuery(string(val[i+1:])); err == nil {
				if id := []byte(q.Get("id")); hexDigest("md5", id) {
					integ = r.integ("md5", bytes.ToLower(id))
				}
			}
		}
		r.add("/", false, val, integ)
	})
	return nil
}
