package run

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

func sri(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(h[:])
}

// With cdn.verify_integrity the CDN's bytes are fetched once per asset and checked against
// the hashes the manifest carries; without it, only existence is checked.
func TestIntegrityOnTheCDN(t *testing.T) {
	good, tampered := "/static/app.js", "/static/vendor.js"
	page := fmt.Sprintf(`<!doctype html><html><head>
<script src="%s" integrity="%s"></script>
<script src="%s" integrity="%s"></script>
<link rel="stylesheet" href="/static/app.css">
</head><body></body></html>`, good, sri(testkit.AssetBody(good)), tampered, sri([]byte("what the build wrote")))
	b := &testkit.Build{Name: "sri", ContentType: "text/html", Manifest: []byte(page), Assets: []string{good, tampered, "/static/app.css"}}
	cdn, err := testkit.StartCDN("/s/", b)
	if err != nil {
		t.Fatal(err)
	}
	defer cdn.Close()
	f, err := testkit.StartFleet([]testkit.Spec{{Build: b}, {Build: b}}, "/index.html")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &testkit.World{Fleet: f, CDN: cdn, Good: b}
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("verify_integrity=%v", on), func(t *testing.T) {
			cfg := loadWorld(t, w, nil, nil)
			cfg.CDN.VerifyIntegrity = on
			cdn.ResetHits()
			heads := cdn.HEADs.Load()
			r, err := Verify(context.Background(), cfg, fast())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range r.Findings {
				got = append(got, string(f.Kind)+" "+f.URL)
			}
			var want []string
			if on {
				want = []string{string(model.KindAssetIntegrity) + " " + cdn.URL + "static/vendor.js"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("findings %v, want %v", got, want)
			}
			for _, p := range b.Assets {
				if n := cdn.Hits(p); n != 1 {
					t.Errorf("%s requested %d times, want once", p, n)
				}
			}
			wantHEADs := int64(3)
			if on {
				wantHEADs = 1 // the stylesheet carries no hash: existence only
			}
			if n := cdn.HEADs.Load() - heads; n != wantHEADs {
				t.Errorf("%d HEADs, want %d", n, wantHEADs)
			}
		})
	}
}
