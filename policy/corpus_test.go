package policy

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/polygraph-dev/polygraph/config"
)

// corpusNow is the day the answer key was written for: exceptions expire relative to it.
var corpusNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// TestCorpus checks the corpus of realistic deploy files against the answer key and requires
// precision and recall of 1.0.
func TestCorpus(t *testing.T) {
	cfg, err := config.Load("testdata/corpus/polygraph.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := readAnswers(t, "testdata/corpus/answers.txt")
	t.Chdir("testdata/corpus")
	in, err := Load(context.Background(), []string{"."}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(context.Background(), in, WithConfig(cfg), WithNow(func() time.Time { return corpusNow }))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range r.Findings {
		got[f.File+":"+itoa(f.Line)+":"+itoa(f.Column)+" "+f.Rule] = true
	}
	tp := 0
	for k := range got {
		if want[k] {
			tp++
		} else {
			t.Errorf("false positive: %s", k)
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("false negative (missed): %s", k)
		}
	}
	precision := float64(tp) / float64(max(len(got), 1))
	recall := float64(tp) / float64(max(len(want), 1))
	t.Logf("corpus: %d files, %d images, %d expected findings: precision %.3f, recall %.3f",
		r.Summary.Files, r.Summary.Images, len(want), precision, recall)
	if precision != 1 || recall != 1 {
		t.Errorf("precision %.3f and recall %.3f, want 1.0 and 1.0", precision, recall)
	}
	if r.Summary.Suppressed != 3 {
		t.Errorf("suppressed = %d, want 3 (the busybox references under a valid exception)", r.Summary.Suppressed)
	}
	if len(r.Summary.Skipped) != 1 || r.Summary.SkippedFiles[0].File != "other/deployment-template.yaml" {
		t.Errorf("skipped = %v, want the Helm template only", r.Summary.SkippedFiles)
	}

	// Every position points at the image value itself.
	for _, img := range in.Images {
		data, err := os.ReadFile(img.File)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		if img.Line < 1 || img.Line > len(lines) {
			t.Errorf("%s:%d: line out of range", img.File, img.Line)
			continue
		}
		line := []rune(lines[img.Line-1])
		if img.Column < 1 || img.Column > len(line) {
			t.Errorf("%s:%d:%d: column out of range", img.File, img.Line, img.Column)
			continue
		}
		at := string(line[img.Column-1:])
		if strings.Contains(img.Unresolved, "intrinsic") && (strings.HasPrefix(at, "{") || strings.HasPrefix(at, "!")) {
			continue
		}
		if !strings.HasPrefix(at, img.Raw) {
			t.Errorf("%s:%d:%d: position shows %q, want the image %q", img.File, img.Line, img.Column, at, img.Raw)
		}
		if !utf8.ValidString(at) {
			t.Errorf("%s: invalid UTF-8", img.File)
		}
	}
}

func readAnswers(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		l := strings.TrimSpace(s.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		want[filepath.ToSlash(l)] = true
	}
	return want
}
