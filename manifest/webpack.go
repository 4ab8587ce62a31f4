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
		return (ep.kind == jNone || ep.kind == jArr || ep.kind == jNull) && mostlyStrings(d, files)
	}
	return mostlyStrings(d, in.root)
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
