package manifest_test

import (
	"errors"
	"fmt"

	"github.com/polygraph-dev/polygraph/manifest"
)

func ExampleParse() {
	body := []byte(`{
  "files": {
    "main.js": "https://cdn.example.com/app/static/js/main.1a2b3c4d.js",
    "main.js.map": "https://cdn.example.com/app/static/js/main.1a2b3c4d.js.map",
    "logo.svg": "data:image/svg+xml,<svg/>"
  },
  "entrypoints": ["static/js/main.1a2b3c4d.js"]
}`)
	m, err := manifest.Parse(manifest.Auto, body, manifest.Options{Path: "/asset-manifest.json"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Format)
	for _, a := range m.Assets {
		fmt.Println(a.Ref)
	}
	for _, s := range m.Skipped {
		fmt.Printf("skipped %.30s: %s\n", s.Value, s.Reason)
	}
	// Output:
	// webpack
	// https://cdn.example.com/app/static/js/main.1a2b3c4d.js
	// skipped https://cdn.example.com/app/st: source map (cdn.check_source_maps is off)
	// skipped data:image/svg+xml,<svg/>: data: URL
}

func ExampleParse_spaFallback() {
	_, err := manifest.Parse(manifest.Auto, []byte("<!doctype html><html><body><div id=root></div>"),
		manifest.Options{Path: "/asset-manifest.json", ContentType: "text/html"})
	var ie *manifest.InvalidError
	fmt.Println(errors.As(err, &ie))
	// Output: true
}

func ExampleVerifyIntegrity() {
	body := []byte("hello\n")
	fmt.Println(manifest.VerifyIntegrity("sha256-WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM=", body))
	fmt.Println(manifest.VerifyIntegrity("md5:b1946ac92492d2347c6235b4d2611184", body))
	err := manifest.VerifyIntegrity("sha1:0000000000000000000000000000000000000000", body)
	var ie *manifest.IntegrityError
	fmt.Println(errors.As(err, &ie), ie.Algorithm)
	// Output:
	// <nil>
	// <nil>
	// true sha1
}
