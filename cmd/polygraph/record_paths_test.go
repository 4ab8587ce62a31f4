package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

// TestRecordAgreesWithVerifyPaths is TestRecordAgreesWithVerify for instances serving two
// manifests (probe.manifest.paths, release.manifest_file a list): a record written from the
// config, from repeated --manifest-file flags, and the release read from release.image all
// hold what verify derives for an honest instance, and an instance serving one of the two
// manifests from another build is a content-mismatch, judged by assets or by bytes.
func TestRecordAgreesWithVerifyPaths(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := regtest.NewServer()
	defer srv.Close()
	ctx := context.Background()
	// Relative references resolve against each manifest's own URL path: the record must parse
	// each file with the options of its path to hash the same asset set. Both reference
	// shared.1.js, which the union holds once.
	appJSON := []byte(`{"main.js":"chunks/main.1.js","shared.js":"/static/shared.1.js"}`)
	pagesJSON := []byte(`{"index.js":"chunks/index.1.js","about.js":"chunks/about.1.js","shared.js":"/static/shared.1.js"}`)
	otherPages := []byte(`{"index.js":"chunks/index.2.js","about.js":"chunks/about.1.js","shared.js":"/static/shared.1.js"}`)
	ref := srv.Ref("store-web:v1")
	released, err := regtest.Push(ctx, ref, regtest.Image{Platform: "linux/amd64", Layers: [][]regtest.File{
		{{Path: "/app/.next/app-manifest.json", Data: appJSON}},
		{{Path: "/app/.next/pages-manifest.json", Data: pagesJSON}, {Path: "/app/other.json", Data: []byte(`{}`)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The other instance runs an older build of the same repository and says so.
	older, err := regtest.Push(ctx, srv.Ref("store-web:v0"), regtest.Image{Platform: "linux/amd64", Layers: [][]regtest.File{
		{{Path: "/app/.next/app-manifest.json", Data: appJSON}, {Path: "/app/.next/pages-manifest.json", Data: otherPages}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(pages []byte) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			switch r.URL.Path {
			case "/_next/app/manifest.json":
				w.Write(appJSON)
			case "/_next/pages/manifest.json":
				w.Write(pages)
			case "/_meta":
				if bytes.Equal(pages, otherPages) {
					w.Write([]byte(`{"digest":"` + older.Digest + `"}`))
				} else {
					http.NotFound(w, r)
				}
			default:
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	honest, other := serve(pagesJSON), serve(otherPages)
	paths := "probe:\n  manifest:\n    paths: [/_next/app/manifest.json, /_next/pages/manifest.json]\n"
	files := "  manifest_file:\n    - /app/.next/app-manifest.json\n    - /app/.next/pages-manifest.json\n"
	fleet := "fleet:\n  static:\n    - {id: honest, address: " + honest + "}\n    - {id: other, address: " + other + "}\n"

	record := func(t *testing.T, dir, cfgText string, flags ...string) *model.ReleaseRecord {
		t.Helper()
		cfg := filepath.Join(dir, "record.yaml")
		write(t, cfg, cfgText)
		out := filepath.Join(dir, "release.json")
		var stdout, stderr bytes.Buffer
		args := append([]string{"polygraph", "release", "record", "--config", cfg, "--out", out, "-q"}, flags...)
		if code := runCLI(ctx, args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("record: exit %d: %s", code, stderr.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var rec model.ReleaseRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		return &rec
	}
	verify := func(t *testing.T, dir, cfgText string) (int, model.Report) {
		t.Helper()
		cfg := filepath.Join(dir, "verify.yaml")
		write(t, cfg, cfgText)
		var stdout, stderr bytes.Buffer
		code := runCLI(ctx, []string{"polygraph", "verify", "--config", cfg, "--output", "json"}, strings.NewReader(""), &stdout, &stderr)
		var rep model.Report
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("verify: exit %d, %v: %s %s", code, err, stdout.String(), stderr.String())
		}
		return code, rep
	}
	// judged checks the honest instance matches the release and the other one is exactly a
	// content-mismatch.
	judged := func(t *testing.T, code int, rep model.Report, source string) {
		t.Helper()
		if code != 1 || rep.Release.Source != source {
			t.Fatalf("verify: exit %d, release %+v, findings %+v", code, rep.Release, rep.Findings)
		}
		byID := map[string]model.Instance{}
		for _, in := range rep.Instances {
			byID[in.ID] = in
		}
		h := byID["honest"]
		if h.Status != model.StatusOK || h.ManifestSHA256 != rep.Release.ManifestSHA256 || h.AssetsSHA256 != rep.Release.AssetsSHA256 || h.Assets != 4 {
			t.Errorf("honest instance %+v, release %+v", h, rep.Release)
		}
		var kinds []string
		for _, f := range rep.Findings {
			kinds = append(kinds, string(f.Kind)+" "+f.Instance)
		}
		if !slices.Equal(kinds, []string{"content-mismatch other"}) {
			t.Errorf("findings %q, want a content-mismatch of other only", kinds)
		}
	}

	t.Run("record from the config's list", func(t *testing.T) {
		dir := t.TempDir()
		rec := record(t, dir, "release:\n  image: "+ref+"\n"+files+fleet+paths)
		if rec.ManifestFile != "" || len(rec.ManifestFiles) != 2 || !slices.Equal(rec.ManifestPaths, []string{"/_next/app/manifest.json", "/_next/pages/manifest.json"}) || rec.Assets != 4 {
			t.Fatalf("record %+v", rec)
		}
		code, rep := verify(t, dir, "release:\n  record: release.json\n"+fleet+paths)
		judged(t, code, rep, model.SourceRecord)
	})
	t.Run("record from repeated flags", func(t *testing.T) {
		dir := t.TempDir()
		record(t, dir, "release:\n  image: "+ref+"\n"+fleet+paths,
			"--manifest-file", "/app/.next/app-manifest.json", "--manifest-file", "/app/.next/pages-manifest.json")
		code, rep := verify(t, dir, "release:\n  record: release.json\n"+fleet+paths+"compare: bytes\n")
		judged(t, code, rep, model.SourceRecord)
	})
	t.Run("release image and the list", func(t *testing.T) {
		code, rep := verify(t, t.TempDir(), "release:\n  image: "+ref+"\n"+files+fleet+paths)
		judged(t, code, rep, model.SourceRegistry)
	})
	t.Run("files in another order than the paths", func(t *testing.T) {
		// The pages manifest parsed as if served at the app path: another asset set, so the
		// honest instance no longer matches. The list's order is the paths' order.
		swapped := "  manifest_file:\n    - /app/.next/pages-manifest.json\n    - /app/.next/app-manifest.json\n"
		code, rep := verify(t, t.TempDir(), "release:\n  image: "+ref+"\n"+swapped+fleet+paths)
		if code != 1 || len(rep.Findings) != 2 {
			t.Errorf("verify: exit %d, findings %+v", code, rep.Findings)
		}
	})
	t.Run("record for other paths", func(t *testing.T) {
		dir := t.TempDir()
		record(t, dir, "release:\n  image: "+ref+"\n"+files+fleet+paths)
		var stdout, stderr bytes.Buffer
		cfg := filepath.Join(dir, "verify.yaml")
		write(t, cfg, "release:\n  record: release.json\n"+fleet+"probe:\n  manifest:\n    paths: [/_next/pages/manifest.json, /_next/app/manifest.json]\n")
		code := runCLI(ctx, []string{"polygraph", "verify", "--config", cfg}, strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "was recorded for the manifests served at /_next/app/manifest.json, /_next/pages/manifest.json") {
			t.Errorf("verify: exit %d: %s", code, stderr.String())
		}
	})
	t.Run("diagnose reads every file of the list", func(t *testing.T) {
		// The other group is attributed by its claimed digest, confirmed by reading both
		// files out of that image and finding the content the group serves.
		dir := t.TempDir()
		cfg := filepath.Join(dir, "polygraph.yaml")
		write(t, cfg, "release:\n  image: "+ref+"\n"+files+fleet+paths+"  digest: {source: http, path: /_meta, pointer: /digest}\n")
		var stdout, stderr bytes.Buffer
		code := runCLI(ctx, []string{"polygraph", "diagnose", "--config", cfg, "--output", "json"}, strings.NewReader(""), &stdout, &stderr)
		var d model.Diagnosis
		if err := json.Unmarshal(stdout.Bytes(), &d); err != nil || code != 1 {
			t.Fatalf("diagnose: exit %d, %v: %s %s", code, err, stdout.String(), stderr.String())
		}
		var got []string
		for _, g := range d.Groups {
			got = append(got, fmt.Sprintf("%s %s %s %v", strings.Join(g.Instances, ","), g.Attribution.How, g.Attribution.Digest, g.Attribution.Confirmed))
		}
		want := []string{"honest release " + released.Digest + " true", "other reported-digest " + older.Digest + " true"}
		if !slices.Equal(got, want) {
			t.Errorf("groups %q, want %q", got, want)
		}
	})
	t.Run("one flag for two paths", func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "record.yaml")
		write(t, cfg, "release:\n  image: "+ref+"\n"+fleet+paths)
		var stdout, stderr bytes.Buffer
		code := runCLI(ctx, []string{"polygraph", "release", "record", "--config", cfg, "--manifest-file", "/app/.next/app-manifest.json"}, strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "1 manifest files given, and probe.manifest.paths lists 2 paths") {
			t.Errorf("record: exit %d: %s", code, stderr.String())
		}
	})
}
