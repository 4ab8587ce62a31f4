package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// craManifest builds a create-react-app asset-manifest.json of about 25 KB with 200 files
// entries (chunks, their source maps, CSS and media), like the fleet benchmark serves.
func craManifest(build int) []byte {
	var sb strings.Builder
	sb.WriteString("{\n  \"files\": {\n")
	n := 0
	entry := func(k, v string) {
		if n > 0 {
			sb.WriteString(",\n")
		}
		fmt.Fprintf(&sb, "    %q: %q", k, v)
		n++
	}
	entry("main.css", fmt.Sprintf("/static/css/main.%08x.css", build))
	entry("main.js", fmt.Sprintf("/static/js/main.%08x.js", build))
	entry("index.html", "/index.html")
	for i := 0; n < 200; i++ {
		h := uint32(build*7919+i) * 2654435761
		switch i % 4 {
		case 0, 1:
			entry(fmt.Sprintf("static/js/src_components_Widget%d_tsx.%08x.chunk.js", i, h), fmt.Sprintf("/static/js/src_components_Widget%d_tsx.%08x.chunk.js", i, h))
		case 2:
			entry(fmt.Sprintf("static/js/src_components_Widget%d_tsx.%08x.chunk.js.map", i, h), fmt.Sprintf("/static/js/src_components_Widget%d_tsx.%08x.chunk.js.map", i, h))
		default:
			entry(fmt.Sprintf("static/media/image-%d.%020x.png", i, h), fmt.Sprintf("/static/media/image-%d.%020x.png", i, h))
		}
	}
	fmt.Fprintf(&sb, "\n  },\n  \"entrypoints\": [\n    \"static/css/main.%08x.css\",\n    \"static/js/main.%08x.js\"\n  ]\n}\n", build, build)
	return []byte(sb.String())
}

func TestCRAManifestShape(t *testing.T) {
	b := craManifest(1)
	m, err := Parse(Auto, b, Options{Path: "/asset-manifest.json"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes, %d assets, %d skipped", len(b), len(m.Assets), len(m.Skipped))
	if len(b) < 20000 || len(b) > 30000 || m.Format != "webpack" || len(m.Assets) < 140 {
		t.Fatalf("%d bytes, %s, %d assets, %d skipped", len(b), m.Format, len(m.Assets), len(m.Skipped))
	}
}

func benchParse(b *testing.B, f Format, body []byte, opts Options) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(f, body, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseCRA is the fleet benchmark's per-instance manifest work: detection and
// parsing of a 25 KB, 200-entry asset-manifest.json.
func BenchmarkParseCRA(b *testing.B) {
	benchParse(b, Auto, craManifest(1), Options{Path: "/asset-manifest.json"})
}

func BenchmarkParseCRAConfigured(b *testing.B) {
	benchParse(b, "webpack", craManifest(1), Options{Path: "/asset-manifest.json"})
}

// BenchmarkParseCRAParallel runs the same work on every CPU, as the prober does.
func BenchmarkParseCRAParallel(b *testing.B) {
	body := craManifest(1)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := Parse(Auto, body, Options{Path: "/asset-manifest.json"}); err != nil {
				b.Error(err)
			}
		}
	})
}

// BenchmarkEncodingJSONCRA is the floor a minimal hand-written fetcher pays: encoding/json
// into a typed struct, no detection, no resolution, no dedupe.
func BenchmarkEncodingJSONCRA(b *testing.B) {
	body := craManifest(1)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var m struct {
			Files       map[string]string `json:"files"`
			Entrypoints []string          `json:"entrypoints"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseVite(b *testing.B) {
	benchParse(b, Auto, readSample(b, "vite/manifest.json"), Options{Path: "/.vite/manifest.json"})
}

func BenchmarkParseHTML(b *testing.B) {
	benchParse(b, Auto, readSample(b, "html-edge-cases/index.html"), Options{Path: "/shop/products/index.html"})
}

func BenchmarkParseSprockets(b *testing.B) {
	benchParse(b, Auto, readSample(b, "sprockets/public/assets/.sprockets-manifest-0f1d2c3b4a5968778695a4b3c2d1e0f1.json"), Options{Path: "/assets/.sprockets-manifest.json"})
}

func BenchmarkAssetsSHA256(b *testing.B) {
	m, err := Parse(Auto, craManifest(1), Options{Path: "/asset-manifest.json"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		AssetsSHA256(m.Assets)
	}
}

func BenchmarkVerifyIntegritySHA384(b *testing.B) {
	body := make([]byte, 100<<10)
	integ := "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC"
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		VerifyIntegrity(integ, body)
	}
}
