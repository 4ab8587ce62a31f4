package policy

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		".github/workflows/ci.yml":    "on: push\njobs:\n  a:\n    container: node:20\n",
		".git/config.yaml":            "services:\n  a:\n    image: skipped:1\n",
		"node_modules/x/c.yaml":       "services:\n  a:\n    image: skipped:1\n",
		"deploy/Dockerfile.prod":      "FROM alpine:3.20\n",
		"deploy/app.containerfile":    "FROM alpine:3.19\n",
		"deploy/k8s.yml":              "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{image: a:1}]\n",
		"deploy/chart/templates.yaml": "image: {{ .Values.image }\n  bad: [\n",
		"deploy/notes.txt":            "FROM alpine:latest\n",
		"deploy/binary.json":          "\xff\xfe",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	in, err := Load(context.Background(), []string{".", "-"}, strings.NewReader("FROM busybox:1.36\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, im := range in.Images {
		got = append(got, im.File+" "+im.Ref)
	}
	sort.Strings(got)
	want := []string{
		".github/workflows/ci.yml node:20",
		"<stdin> busybox:1.36",
		"deploy/Dockerfile.prod alpine:3.20",
		"deploy/app.containerfile alpine:3.19",
		"deploy/k8s.yml a:1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("images:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(in.Skipped) != 1 || in.Skipped[0].File != "deploy/chart/templates.yaml" || !strings.HasPrefix(in.Skipped[0].Reason, "not parseable: ") {
		t.Errorf("skipped = %v", in.Skipped)
	}
	if len(in.Files) != 5 {
		t.Errorf("files = %v, want 5", in.Files)
	}

	// Named explicitly, an unparseable file is an error; a missing path too.
	if _, err := Load(context.Background(), []string{"deploy/chart/templates.yaml"}, nil, nil); err == nil {
		t.Error("no error for an unparseable file named explicitly")
	}
	if _, err := Load(context.Background(), []string{"nope"}, nil, nil); err == nil || !os.IsNotExist(unwrapAllErr(err)) {
		t.Errorf("err = %v, want not-exist", err)
	}
}

func unwrapAllErr(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}
