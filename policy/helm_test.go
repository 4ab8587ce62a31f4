package policy

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// recordedHelm renders every chart as the recording of `helm template polygraph
// testdata/helm/store-web` made with helm v3.22.
func recordedHelm(t *testing.T) HelmRenderer {
	t.Helper()
	data, err := os.ReadFile("testdata/helm-store-web.rendered.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, dir string) ([]byte, error) { return data, nil }
}

func chartFindings(t *testing.T, in *Inputs) []string {
	t.Helper()
	r, err := Check(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.File+":"+itoa(f.Line)+":"+itoa(f.Column)+" "+f.Rule+" "+f.Image)
	}
	sort.Strings(got)
	return got
}

// TestHelmChart checks that a chart directory met in a walk is rendered, its templates are not
// read as files, and each image is placed where it came from: the values.yaml tag, Chart.yaml's
// appVersion (the tag defaults to it), the values.yaml image, or the template's literal.
func TestHelmChart(t *testing.T) {
	in, err := Load(context.Background(), []string{"testdata/helm"}, nil, nil, WithHelmRenderer(recordedHelm(t)))
	if err != nil {
		t.Fatal(err)
	}
	if k := in.Files["testdata/helm/store-web/Chart.yaml"]; k != KindHelm || len(in.Files) != 1 {
		t.Errorf("files = %v, want the chart only", in.Files)
	}
	if len(in.Skipped) != 0 {
		t.Errorf("skipped = %v, want nothing (the templates are rendered, not read)", in.Skipped)
	}
	want := []string{
		"testdata/helm/store-web/Chart.yaml:6:14 mutable-tag ghcr.io/acme/store-web:2.31.0",
		"testdata/helm/store-web/templates/tests/test-connection.yaml:10:14 latest-tag busybox",
		"testdata/helm/store-web/values.yaml:15:11 mutable-tag docker.io/flyway/flyway:10.17",
	}
	if got := chartFindings(t, in); !reflect.DeepEqual(got, want) {
		t.Errorf("findings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(in.Images) != 4 {
		t.Errorf("%d images, want 4 (the pinned sidecar too)", len(in.Images))
	}
	for _, img := range in.Images {
		if img.Kind != KindHelm || !strings.Contains(img.Where, "(chart store-web, store-web/templates/") {
			t.Errorf("image %+v: want kind %s and the template named", img, KindHelm)
		}
	}

	// Named as the directory itself, the chart is rendered the same way.
	in, err = Load(context.Background(), []string{"testdata/helm/store-web"}, nil, nil, WithHelmRenderer(recordedHelm(t)))
	if err != nil {
		t.Fatal(err)
	}
	if got := chartFindings(t, in); !reflect.DeepEqual(got, want) {
		t.Errorf("chart named directly: findings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// An excluded chart is not rendered.
	in, err = Load(context.Background(), []string{"testdata/helm"}, nil, nil, WithExclude("store-web/**"),
		WithHelmRenderer(func(context.Context, string) ([]byte, error) { t.Error("excluded chart rendered"); return nil, nil }))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Images) != 0 || len(in.Skipped) == 0 {
		t.Errorf("excluded chart: images %v, skipped %v", in.Images, in.Skipped)
	}
}

// TestHelmNotRendered checks that a chart that cannot be rendered is a warning at its
// Chart.yaml saying why, never a silent skip.
func TestHelmNotRendered(t *testing.T) {
	t.Run("helm not installed", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		in, err := Load(context.Background(), []string{"testdata/helm"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"testdata/helm/store-web/Chart.yaml:1:1 unresolved-image "}
		if got := chartFindings(t, in); !reflect.DeepEqual(got, want) {
			t.Fatalf("findings = %v, want %v", got, want)
		}
		msg := in.Images[0].Unresolved
		if msg != "helm is not installed: render with `helm template testdata/helm/store-web | polygraph policy check -`" {
			t.Errorf("message = %q", msg)
		}
	})
	t.Run("render error", func(t *testing.T) {
		in, err := Load(context.Background(), []string{"testdata/helm"}, nil, nil,
			WithHelmRenderer(func(context.Context, string) ([]byte, error) {
				return nil, errors.New(`rendering chart "x": found in Chart.yaml, but missing in charts/ directory: postgresql`)
			}))
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Images) != 1 || !strings.Contains(in.Images[0].Unresolved, "missing in charts/ directory") {
			t.Errorf("images = %+v, want one unresolved with helm's error", in.Images)
		}
	})
}

// fakeHelm puts a helm executable running script on PATH.
func fakeHelm(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "helm"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestHelmBinary(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run a fake helm")
	}
	t.Run("arguments and isolated home", func(t *testing.T) {
		fakeHelm(t, `echo "args: $*"; echo "cache: $HELM_CACHE_HOME"`)
		out, err := HelmBinary(context.Background(), "charts/web")
		if err != nil {
			t.Fatal(err)
		}
		s := string(out)
		if !strings.Contains(s, "args: template polygraph charts/web\n") || !strings.Contains(s, "polygraph-helm-") {
			t.Errorf("output = %q: want helm template of the chart, helm's cache in a temporary directory", s)
		}
	})
	t.Run("error is helm's last line", func(t *testing.T) {
		fakeHelm(t, `echo "WARNING: something" >&2; echo "Error: found in Chart.yaml, but missing in charts/ directory: redis" >&2; exit 1`)
		_, err := HelmBinary(context.Background(), "charts/web")
		if err == nil || err.Error() != `rendering chart "charts/web": Error: found in Chart.yaml, but missing in charts/ directory: redis` {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("output cap", func(t *testing.T) {
		fakeHelm(t, `exec yes 'apiVersion: v1'`)
		_, err := HelmBinary(context.Background(), "charts/web")
		if err == nil || !strings.Contains(err.Error(), "printed more than 16 MiB") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("deadline of the check", func(t *testing.T) {
		fakeHelm(t, `exec sleep 30`)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := HelmBinary(ctx, "charts/web")
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Errorf("error %v after %v, want the context's deadline at once", err, time.Since(start))
		}
	})
}

// TestHelmRecording renders the test chart with the real helm when it is installed and checks
// that the recording TestHelmChart uses is what helm prints.
func TestHelmRecording(t *testing.T) {
	if _, err := exec.LookPath("helm"); err != nil {
		t.Skip("helm is not installed; the recorded output is checked by TestHelmChart")
	}
	out, err := HelmBinary(context.Background(), "testdata/helm/store-web")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/helm-store-web.rendered.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(want) {
		t.Errorf("helm template prints\n%s\nwant the recording\n%s", out, want)
	}
}

// TestHelmSharedTag checks that when two images share a tag value, each finding names the tag
// beside its own repository.
func TestHelmSharedTag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "two")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: two\nversion: 0.1.0\n",
		"values.yaml": "api:\n  image:\n    repository: acme/api\n    tag: \"1.4\"\nworker:\n  image:\n    repository: acme/worker\n    tag: \"1.4\"\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rendered := "---\n# Source: two/templates/worker.yaml\napiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers:\n  - name: w\n    image: acme/worker:1.4\n"
	in, err := Load(context.Background(), []string{dir}, nil, nil,
		WithHelmRenderer(func(context.Context, string) ([]byte, error) { return []byte(rendered), nil }))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Images) != 1 || in.Images[0].Line != 8 || in.Images[0].Column != 11 {
		t.Errorf("images = %+v, want the worker's tag at values.yaml:8:11", in.Images)
	}
}
