package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe/manifest"
)

// World is a fleet and its CDN, with the config that points polygraph at them.
type World struct {
	Fleet *Fleet
	CDN   *CDN
	// Good is the release's build; Bad is the rebuilt artifact re-pushed under the same tag.
	Good, Bad *Build
	Version   string
}

// Close stops the fleet and the CDN.
func (w *World) Close() {
	if w.Fleet != nil {
		w.Fleet.Close()
	}
	if w.CDN != nil {
		w.CDN.Close()
	}
}

// StartIncident starts the world of the April 2021 incident: six instances all claiming
// v2.31.0; the two newest serve a rebuilt artifact whose assets were never uploaded to the CDN.
func StartIncident() (*World, error) {
	w := &World{Good: CRABuild("store-web v2.31.0 build 1", 24, 8), Bad: CRABuild("store-web v2.31.0 build 2 (re-pushed)", 24, 8), Version: "v2.31.0"}
	cdn, err := StartCDN("/store/", w.Good)
	if err != nil {
		return nil, err
	}
	w.CDN = cdn
	base := time.Date(2021, 4, 6, 9, 0, 0, 0, time.UTC)
	var specs []Spec
	for i := 1; i <= 6; i++ {
		s := Spec{ID: fmt.Sprintf("web-%d", i), Build: w.Good, Version: w.Version, LaunchedAt: base.Add(time.Duration(i) * time.Minute),
			Labels: map[string]string{"az": []string{"us-east-1a", "us-east-1b"}[i%2]}}
		if i >= 5 { // autoscaled after the re-push
			s.Build = w.Bad
			s.LaunchedAt = base.Add(6 * time.Hour).Add(time.Duration(i) * time.Minute)
		}
		specs = append(specs, s)
	}
	f, err := StartFleet(specs, "/asset-manifest.json")
	if err != nil {
		cdn.Close()
		return nil, err
	}
	w.Fleet = f
	return w, nil
}

// Record computes the release record of a build as `polygraph release record` would write it
// for the image that contains it.
func Record(b *Build, image, manifestFile string) (*model.ReleaseRecord, error) {
	m, err := manifest.Parse(manifest.Auto, b.Manifest, manifest.Options{Path: "/" + filepath.Base(manifestFile)})
	if err != nil {
		return nil, fmt.Errorf("parsing build %q: %w", b.Name, err)
	}
	return &model.ReleaseRecord{
		Schema: model.RecordSchema, Image: image, ManifestFile: manifestFile, Platform: "linux/amd64",
		ManifestSHA256: sha256Hex(b.Manifest), AssetsSHA256: manifest.AssetsSHA256(m.Assets), Assets: len(m.Assets),
		RecordedAt: time.Now().UTC().Truncate(time.Second), PolygraphVersion: "testkit",
	}, nil
}

// ConfigYAML returns a polygraph.yaml for the world. record is the release record's path
// ("" for none).
func (w *World) ConfigYAML(record string) string {
	var b strings.Builder
	b.WriteString("# Written by polygraph's simulated world.\nrelease:\n")
	if w.Version != "" {
		fmt.Fprintf(&b, "  image: %q\n", "registry.example.com/store-web:"+w.Version)
	}
	if record != "" {
		fmt.Fprintf(&b, "  record: %s\n", record)
	}
	if w.Version == "" && record == "" {
		b.WriteString("  {}\n")
	}
	b.WriteString("fleet:\n  static:\n")
	for _, in := range w.Fleet.Instances {
		fmt.Fprintf(&b, "    - {id: %s, address: %q}\n", in.ID, in.Address)
	}
	fmt.Fprintf(&b, "probe:\n  host: store.example.com\n  manifest:\n    path: %s\n  version:\n    header: X-App-Version\n  timeout: 2s\n  retries: 1\n", w.Fleet.ManifestPath)
	fmt.Fprintf(&b, "cdn:\n  base_urls:\n    - %s\n", w.CDN.URL)
	return b.String()
}

// WriteConfig writes the config (and the release record beside it) into dir and returns the
// config's path.
func (w *World) WriteConfig(dir string, rec *model.ReleaseRecord) (string, error) {
	recName := ""
	if rec != nil {
		recName = "release.json"
		data, err := jsonIndent(rec)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, recName), data, 0o644); err != nil {
			return "", err
		}
	}
	path := filepath.Join(dir, "polygraph.yaml")
	return path, os.WriteFile(path, []byte(w.ConfigYAML(recName)), 0o644)
}
