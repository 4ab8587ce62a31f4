package run_test

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

// sriBuild is a webpack-assets-manifest build referencing /static/app.js with the SRI hash of
// body, and /static/other.js without one.
func sriBuild(name string, body []byte) *testkit.Build {
	sum := sha256.Sum256(body)
	sri := "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
	return &testkit.Build{
		Name:        name,
		ContentType: "application/json",
		Manifest: []byte(fmt.Sprintf(`{"app.js": {"src": "/static/app.js", "integrity": %q}, "other.js": {"src": "/static/other.js"}, "build": {"src": "/static/%s.js"}}`,
			sri, strings.ReplaceAll(name, " ", "-"))),
		Assets: []string{"/static/app.js", "/static/other.js", "/static/" + strings.ReplaceAll(name, " ", "-") + ".js"},
	}
}

func findingsOf(rep *model.Report, kind model.Kind) []model.Finding {
	var out []model.Finding
	for _, f := range rep.Findings {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// TestIntegrityPerInstance: instances expecting different hashes for one URL are each judged
// against their own; asset-integrity names exactly those whose hash the bytes contradict,
// whichever instance the fleet lists first.
func TestIntegrityPerInstance(t *testing.T) {
	right := sriBuild("good build", testkit.AssetBody("/static/app.js"))
	wrong := sriBuild("bad build", []byte("other bytes"))
	for _, order := range [][]*testkit.Build{{right, right, wrong}, {wrong, right, right}} {
		t.Run(order[0].Name+" first", func(t *testing.T) {
			specs := []testkit.Spec{{Build: order[0]}, {Build: order[1]}, {Build: order[2]}}
			w := startWorld(t, specs, worldOpts{})
			w.cdn.Add(right.Assets...)
			w.cdn.Add(wrong.Assets...)
			w.cfg.CDN.VerifyIntegrity = true
			rep := w.verify(t, 10*time.Second)
			var wantIDs []string
			for i, b := range order {
				if b == wrong {
					wantIDs = append(wantIDs, w.fleet.Instances[i].ID)
				}
			}
			got := findingsOf(rep, model.KindAssetIntegrity)
			if len(got) != 1 || !slices.Equal(got[0].Instances, wantIDs) {
				t.Fatalf("asset-integrity findings %+v, want one naming %v", got, wantIDs)
			}
			if rep.CDN.IntegrityChecked != 1 {
				t.Errorf("cdn.integrity_checked = %d, want 1", rep.CDN.IntegrityChecked)
			}
			if n := w.cdn.Hits("/static/app.js"); n != 1 {
				t.Errorf("/static/app.js requested %d times, want once", n)
			}
		})
	}
}

// deadURL is a CDN base URL on a loopback port nothing listens on.
func deadURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String() + "/store/"
	l.Close()
	return u
}

// TestDeadPrimaryCDN: a primary that never answers is a run that could not verify (exit 3),
// unless findings already give exit 1; its assets count as unchecked, never as present.
func TestDeadPrimaryCDN(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		w := startWorld(t, []testkit.Spec{{}, {}}, worldOpts{retries: 1})
		w.cfg.CDN.BaseURLs = []string{deadURL(t)}
		rep := w.verify(t, 10*time.Second)
		if rep.Error == "" || !strings.Contains(rep.Error, "gave no HTTP response") {
			t.Fatalf("report error %q, want the dead primary named", rep.Error)
		}
		if code := rep.ExitCode(model.SeverityError); code != model.ExitUnverifiable {
			t.Errorf("exit %d, want 3", code)
		}
		if rep.Verdict != model.VerdictError || rep.CDN.Unchecked != rep.CDN.Checked || rep.CDN.Checked == 0 || rep.CDN.Missing != 0 {
			t.Errorf("verdict %s, cdn %+v", rep.Verdict, rep.CDN)
		}
	})
	t.Run("with findings", func(t *testing.T) {
		other := testkit.CRABuild("store-web v2", 3, 1)
		w := startWorld(t, []testkit.Spec{{}, {}, {Build: other}}, worldOpts{retries: 1})
		w.cfg.CDN.BaseURLs = []string{deadURL(t)}
		rep := w.verify(t, 10*time.Second)
		if rep.Error == "" {
			t.Fatal("no report error for a dead primary")
		}
		if code := rep.ExitCode(model.SeverityError); code != model.ExitFindings {
			t.Errorf("exit %d, want 1 (content-drift takes precedence)", code)
		}
	})
	t.Run("answering 503 is not dead", func(t *testing.T) {
		w := startWorld(t, []testkit.Spec{{}, {}}, worldOpts{retries: 1})
		for _, a := range w.build.Assets {
			w.cdn.Fail(a, 503)
		}
		rep := w.verify(t, 10*time.Second)
		if rep.Error != "" || rep.CDN.Unchecked != len(w.build.Assets) {
			t.Fatalf("error %q, cdn %+v", rep.Error, rep.CDN)
		}
		if code := rep.ExitCode(model.SeverityError); code != model.ExitOK {
			t.Errorf("exit %d, want 0 at --fail-on error (warnings only)", code)
		}
	})
}

// TestReplicaFailures: a replica answering 5xx, 429 or nothing gives asset-unchecked naming
// the replica URL, never silence.
func TestReplicaFailures(t *testing.T) {
	for _, c := range []struct {
		name    string
		breakIt func(*testkit.CDN, []string)
	}{
		{"503", func(c *testkit.CDN, as []string) {
			for _, a := range as {
				c.Fail(a, 503)
			}
		}},
		{"429", func(c *testkit.CDN, as []string) {
			for _, a := range as {
				c.Fail(a, 429)
			}
		}},
		{"hanging", func(c *testkit.CDN, _ []string) { c.SetLatency(3 * time.Second) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := startWorld(t, []testkit.Spec{{}, {}}, worldOpts{retries: 1, timeout: "300ms"})
			replica, err := testkit.StartCDN("/replica/", w.build)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(replica.Close)
			c.breakIt(replica, w.build.Assets)
			w.cfg.CDN.BaseURLs = append(w.cfg.CDN.BaseURLs, replica.URL)
			rep := w.verify(t, 15*time.Second)
			got := findingsOf(rep, model.KindAssetUnchecked)
			if len(got) != len(w.build.Assets) {
				t.Fatalf("%d asset-unchecked findings, want %d: %+v", len(got), len(w.build.Assets), rep.Findings)
			}
			for _, f := range got {
				if !strings.HasPrefix(f.URL, replica.URL) || len(f.Instances) != 2 {
					t.Errorf("finding %+v does not name the replica URL and both instances", f)
				}
			}
			if rep.Error != "" || rep.CDN.Unchecked != 0 {
				t.Errorf("error %q, cdn %+v: the primary answered", rep.Error, rep.CDN)
			}
		})
	}
}

// TestCDNExclude: assets cdn.exclude names are counted as skipped and never requested, so an
// origin-served file missing on the CDN is no finding.
func TestCDNExclude(t *testing.T) {
	w := startWorld(t, []testkit.Spec{{}, {}}, worldOpts{})
	var media []string
	for _, a := range w.build.Assets {
		if strings.HasPrefix(a, "/static/media/") {
			media = append(media, a)
		}
	}
	if len(media) == 0 {
		t.Fatal("the build has no media")
	}
	w.cdn.Remove(media...)
	w.cfg.CDN.Exclude = []string{"/static/media/**"}
	rep := w.verify(t, 10*time.Second)
	if len(rep.Findings) != 0 {
		t.Fatalf("findings %+v", rep.Findings)
	}
	if rep.CDN.Skipped != len(media) || rep.CDN.Checked != len(w.build.Assets)-len(media) {
		t.Errorf("cdn %+v, want %d skipped", rep.CDN, len(media))
	}
	for _, m := range media {
		if n := w.cdn.Hits(m); n != 0 {
			t.Errorf("%s requested %d times", m, n)
		}
	}
}
