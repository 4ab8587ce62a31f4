package run_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

// flatBuild is a flat webpack manifest of n assets.
func flatBuild(n int) *testkit.Build {
	var sb strings.Builder
	b := &testkit.Build{Name: fmt.Sprintf("flat %d", n), ContentType: "application/json"}
	sb.WriteString("{")
	for i := range n {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `"%x":"/a/%x.js"`, i, i)
		b.Assets = append(b.Assets, fmt.Sprintf("/a/%x.js", i))
	}
	sb.WriteString("}")
	b.Manifest = []byte(sb.String())
	return b
}

// TestMaxAssetsDefault: a manifest referencing more than probe.manifest.max_assets (100,000 by
// default) is manifest-invalid, and not one of its assets is requested.
func TestMaxAssetsDefault(t *testing.T) {
	big := flatBuild(100001)
	w := startWorld(t, []testkit.Spec{{Build: big}}, worldOpts{})
	rep := w.verify(t, 20*time.Second)
	if got := kinds(rep, w.fleet.Instances[0].ID); len(got) != 1 || got[0] != string(model.KindManifestInvalid) {
		t.Fatalf("findings %v, want manifest-invalid", got)
	}
	if n := w.cdn.Requests.Load(); n != 0 || rep.CDN.Checked != 0 {
		t.Errorf("%d CDN requests, cdn %+v", n, rep.CDN)
	}
}

// TestDeadlineHoldsForAHugeManifest: 30,000 assets on a slow CDN and a 2s deadline: the run
// ends by its deadline; the assets not asked by then are counted as unchecked and reported in
// one finding, not one each. (Sized so that the race detector on a loaded machine keeps the
// timing honest; the 600,000-entry figures are in docs/verdicts-notes.md.)
func TestDeadlineHoldsForAHugeManifest(t *testing.T) {
	big := flatBuild(30000)
	w := startWorld(t, []testkit.Spec{{Build: big}}, worldOpts{})
	w.cdn.Add(big.Assets...)
	w.cdn.SetLatency(50 * time.Millisecond)
	rep := w.verify(t, 2*time.Second) // fails the test past the deadline + slack
	unchecked := 0
	for _, f := range rep.Findings {
		if f.Kind == model.KindAssetUnchecked {
			unchecked++
		}
	}
	if rep.CDN.Checked != 30000 || rep.CDN.Unchecked == 0 || unchecked > 1000 {
		t.Fatalf("cdn %+v, %d asset-unchecked findings", rep.CDN, unchecked)
	}
	if rep.Verdict == model.VerdictPass {
		t.Error("a run that checked a fraction of its assets passed")
	}
}

// TestForcedWrongFormatNeverPasses: a format that reads no reference from what instances serve
// (JSON read as HTML) is manifest-invalid for each, never a pass having checked nothing.
func TestForcedWrongFormatNeverPasses(t *testing.T) {
	w := startWorld(t, []testkit.Spec{{}, {}}, worldOpts{extra: "  manifest:\n    format: html\n"})
	rep := w.verify(t, 10*time.Second)
	for _, in := range w.fleet.Instances {
		if got := kinds(rep, in.ID); len(got) != 1 || got[0] != string(model.KindManifestInvalid) {
			t.Errorf("%s: findings %v, want manifest-invalid", in.ID, got)
		}
	}
	if rep.Verdict != model.VerdictFail || w.cdn.Requests.Load() != 0 {
		t.Errorf("verdict %s, %d CDN requests", rep.Verdict, w.cdn.Requests.Load())
	}
}
