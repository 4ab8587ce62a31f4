package testkit

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/polygraph-dev/polygraph/manifest"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

// ManifestFile is where the simulated images keep the served manifest.
const ManifestFile = "/app/build/asset-manifest.json"

// World is a fleet and its CDN, with the config that points polygraph at them.
type World struct {
	Fleet    *Fleet
	CDN      *CDN
	Registry *regtest.Server
	// Image is the release's image reference (a tag on Registry).
	Image string
	// Record is the release record written right after the first push; Released and Repushed
	// are what the tag pointed at then and points at now.
	Record             *model.ReleaseRecord
	Released, Repushed *regtest.Pushed
	// Good is the release's build; Bad is the rebuilt artifact re-pushed under the same tag.
	Good, Bad *Build
	Version   string
	// Runtime adds probe.runtime to the config: every instance's Docker Engine API (served on
	// its own address, Spec.Runtime) is asked which image it runs.
	Runtime bool
}

// Close stops the fleet and the CDN.
func (w *World) Close() {
	if w.Fleet != nil {
		w.Fleet.Close()
	}
	if w.CDN != nil {
		w.CDN.Close()
	}
	if w.Registry != nil {
		w.Registry.Close()
	}
}

// StartIncident starts the world of the April 2021 incident. The release v2.31.0 is pushed to
// an in-process registry (a multi-arch index with an attestation) and recorded; then a CI
// change re-pushes the tag with a rebuilt artifact whose assets were never uploaded to the CDN.
// Six instances all claim v2.31.0; the two newest were autoscaled after the re-push and run
// the rebuild.
func StartIncident(ctx context.Context) (w *World, err error) {
	w = &World{Good: CRABuild("store-web v2.31.0 build 1", 24, 8), Bad: CRABuild("store-web v2.31.0 build 2 (re-pushed)", 24, 8), Version: "v2.31.0"}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	w.Registry = regtest.NewServer()
	w.Image = w.Registry.Ref("store-web:" + w.Version)
	base := time.Date(2021, 4, 6, 9, 0, 0, 0, time.UTC)
	if w.Released, w.Record, err = PublishAt(ctx, w.Image, w.Good, base.Add(-20*time.Minute)); err != nil {
		return nil, err
	}
	w.Record.RecordedAt = base.Add(-10 * time.Minute) // the CI job recorded it right after the push
	if w.Repushed, err = regtest.PushIndex(ctx, w.Image, imageOf(w.Bad, base.Add(5*time.Hour))); err != nil {
		return nil, fmt.Errorf("re-pushing %s: %w", w.Image, err)
	}
	if w.CDN, err = StartCDN("/store/", w.Good); err != nil {
		return nil, err
	}
	var specs []Spec
	for i := 1; i <= 6; i++ {
		s := Spec{ID: fmt.Sprintf("web-%d", i), Build: w.Good, Version: w.Version, Digest: w.Released.Digest,
			LaunchedAt: base.Add(time.Duration(i) * time.Minute),
			Labels:     map[string]string{"az": []string{"us-east-1a", "us-east-1b"}[i%2]}}
		s.Runtime = runtimeOf(w.Image, w.Released)
		if i >= 5 { // autoscaled after the re-push: same version, other artifact
			s.Build, s.Digest = w.Bad, w.Repushed.Digest
			s.LaunchedAt = base.Add(6 * time.Hour).Add(time.Duration(i) * time.Minute)
			s.Runtime = runtimeOf(w.Image, w.Repushed)
		}
		specs = append(specs, s)
	}
	// One port for every instance, as an EC2 fleet has, so one docker_host template reaches
	// every instance's Engine API.
	if w.Fleet, err = StartFleetWith(specs, FleetOptions{ManifestPath: "/asset-manifest.json", SamePort: true}); err != nil {
		return nil, err
	}
	return w, nil
}

// runtimeOf is what Docker reports for a container started from the pushed image on
// linux/amd64: the platform's config digest as the image ID, the index digest as the repo digest.
func runtimeOf(image string, p *regtest.Pushed) *Runtime {
	repo := image
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	rt := &Runtime{RepoDigests: []string{repo + "@" + p.Digest}}
	for _, im := range p.Images {
		if im.Platform == "linux/amd64" {
			rt.ImageID = im.Config
		}
	}
	return rt
}

// DockerHost is the docker_host template that reaches every instance's Engine API.
func (w *World) DockerHost() string {
	_, port, _ := net.SplitHostPort(w.Fleet.Instances[0].Address)
	return "tcp://{host}:" + port
}

// imageOf is a two-platform image index (with an attestation) whose top layer holds the
// build's manifest at ManifestFile; created is its configs' created time (zero for none).
func imageOf(b *Build, created time.Time) regtest.Index {
	img := func(platform string) regtest.Image {
		return regtest.Image{Platform: platform, Created: created, Layers: [][]regtest.File{
			{{Path: "/app/server", Data: []byte("#!/bin/sh\nexec node server.js\n")}},
			{{Path: ManifestFile, Data: b.Manifest}},
		}}
	}
	return regtest.Index{Images: []regtest.Image{img("linux/amd64"), img("linux/arm64")}, Attestation: true}
}

// Publish pushes an image holding the build to ref and records the release, as a CI job
// would right after the push (`polygraph release record`).
func Publish(ctx context.Context, ref string, b *Build) (*regtest.Pushed, *model.ReleaseRecord, error) {
	return PublishAt(ctx, ref, b, time.Time{})
}

// PublishAt is Publish with the image configs' created time set to created.
func PublishAt(ctx context.Context, ref string, b *Build, created time.Time) (*regtest.Pushed, *model.ReleaseRecord, error) {
	pushed, err := regtest.PushIndex(ctx, ref, imageOf(b, created))
	if err != nil {
		return nil, nil, fmt.Errorf("pushing %s: %w", ref, err)
	}
	c, err := registry.New(registry.WithCacheDir(""), registry.WithPolygraphVersion("testkit"),
		registry.WithManifestFormat(manifest.Auto, manifest.Options{Path: "/asset-manifest.json"}))
	if err != nil {
		return nil, nil, err
	}
	rec, err := c.Record(ctx, ref, "linux/amd64", ManifestFile)
	if err != nil {
		return nil, nil, fmt.Errorf("recording %s: %w", ref, err)
	}
	return pushed, rec, nil
}

// ConfigYAML returns a polygraph.yaml for the world. record is the release record's path
// ("" for none).
func (w *World) ConfigYAML(record string) string {
	var b strings.Builder
	b.WriteString("# Written by polygraph's simulated world.\nrelease:\n")
	if w.Image != "" {
		fmt.Fprintf(&b, "  image: %q\n  manifest_file: %s\n", w.Image, ManifestFile)
	}
	if record != "" {
		fmt.Fprintf(&b, "  record: %s\n", record)
	}
	if w.Image == "" && record == "" {
		b.WriteString("  {}\n")
	}
	b.WriteString("fleet:\n  static:\n")
	for _, in := range w.Fleet.Instances {
		fmt.Fprintf(&b, "    - {id: %s, address: %q}\n", in.ID, in.Address)
	}
	fmt.Fprintf(&b, "probe:\n  host: store.example.com\n  manifest:\n    path: %s\n  version:\n    header: X-App-Version\n  digest:\n    source: header\n    header: X-Image-Digest\n  timeout: 2s\n  retries: 1\n", w.Fleet.ManifestPath)
	if w.Runtime {
		fmt.Fprintf(&b, "  runtime:\n    source: docker\n    container: web\n    docker_host: %q\n", w.DockerHost())
	}
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
