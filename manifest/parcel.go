package manifest

// parcel is parcel-reporter-bundle-manifest's parcel-manifest.json: {"app.js":
// "/static/app.f34962ab.js"}, keys the source file names, values with --public-url baked in.
// Its shape is webpack's flat one, so auto-detection needs the file name parcel-manifest.json.
type parcel struct{}

func init() { register(parcel{}) }

func (parcel) format() Format { return "parcel" }

func (parcel) detect(in *input) bool {
	return in.name == "parcel-manifest.json" && mostlyStrings(in.doc, in.root)
}

func (parcel) parse(in *input, r *resolver) error {
	in.strValues(in.root, r, dirOf(in.opts.Path), false)
	return nil
}
