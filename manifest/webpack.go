package manifest

import "bytes"

// webpack is webpack-manifest-plugin's output: a flat {"name": "path"} object, or
// create-react-app's asset-manifest.json {"files": {...}, "entrypoints": [...]}. Paths carry
// the public path baked in; relative ones resolve against the manifest's directory.
type webpack struct{}

func init() { register(webpack{}) }

func (webpack) format() Format { return "webpack" }

func (webpack) detect(in *input) bool {
	d := in.doc
	if files := d.get(in.root, "files"); files.kind == jObj {
		ep := d.get(in.root, "entrypoints")
		return (ep.kind == jNone || ep.kind == jArr || ep.kind == jNull) && mostlyPaths(d, files)
	}
	return mostlyPaths(d, in.root)
}

// mostlyPaths reports whether obj is mostly strings (see mostlyStrings) and at least half of
// them look like asset paths: a flat object of strings such as {"version": "1701"} (SvelteKit's
// _app/version.json, Nuxt's builds/latest.json) is no manifest.
func mostlyPaths(d *jdoc, obj jv) bool {
	if !mostlyStrings(d, obj) {
		return false
	}
	strs, paths := 0, 0
	d.each(obj, func(_, v jv) {
		if v.kind == jStr {
			strs++
			if looksLikeAssetPath(d.bytes(v)) {
				paths++
			}
		}
	})
	return paths > 0 && 2*paths >= strs
}

// looksLikeAssetPath reports whether v reads like a file path or URL: no white space, and a
// last path segment with an extension that starts with a letter ("main.4f2a.js", "/a.css",
// "https://cdn.example.com/x.png?v=1"), which a version ("1.2.3"), a number or an ID is not.
func looksLikeAssetPath(v []byte) bool {
	if len(v) == 0 || bytes.ContainsAny(v, " \t\r\n") {
		return false
	}
	if i := bytes.IndexAny(v, "?#"); i >= 0 {
		v = v[:i]
	}
	if i := bytes.LastIndexByte(v, '/'); i >= 0 {
		v = v[i+1:]
	}
	dot := bytes.LastIndexByte(v, '.')
	if dot < 0 || dot == len(v)-1 {
		return false
	}
	c := v[dot+1]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// mostlyStrings reports whether obj has string values, at least as many as other values.
func mostlyStrings(d *jdoc, obj jv) bool {
	strs, others := 0, 0
	d.each(obj, func(_, v jv) {
		if v.kind == jStr {
			strs++
		} else {
			others++
		}
	})
	return strs > 0 && strs >= others
}

func (webpack) parse(in *input, r *resolver) error {
	d := in.doc
	base := dirOf(in.opts.Path)
	files := d.get(in.root, "files")
	if files.kind != jObj {
		in.strValues(in.root, r, base, false)
		return nil
	}
	in.strValues(files, r, base, false)
	// CRA bakes PUBLIC_URL into files but not into entrypoints: find it from a file whose
	// path ends with an entrypoint.
	eps := d.get(in.root, "entrypoints")
	in.strElems(eps, r, publicURL(d, files, eps, base), false, "entrypoints")
	return nil
}

func publicURL(d *jdoc, files, eps jv, fallback string) string {
	for _, e := range d.members(eps) {
		if e.val.kind != jStr {
			continue
		}
		ep := bytes.TrimPrefix(d.bytes(e.val), []byte("./"))
		if len(ep) == 0 || ep[0] == '/' {
			continue
		}
		for _, f := range d.members(files) {
			if f.key.kind == jNone || f.val.kind != jStr {
				continue
			}
			fv := d.bytes(f.val)
			if len(fv) > len(ep) && bytes.HasSuffix(fv, ep) && fv[len(fv)-len(ep)-1] == '/' {
				return string(fv[:len(fv)-len(ep)])
			}
		}
	}
	return fallback
}
