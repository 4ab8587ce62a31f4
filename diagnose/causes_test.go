package diagnose

import (
	"slices"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

// Causes are pure: these cases need no registry.
func TestCausesPure(t *testing.T) {
	rep := &model.Report{
		Instances: []model.Instance{{ID: "a", Status: model.StatusOK}, {ID: "b", Status: model.StatusOK}, {ID: "c", Status: model.StatusOK}},
		Findings: []model.Finding{
			{Kind: model.KindAssetMissing, Severity: model.SeverityError, Instances: []string{"a", "b"}, URL: "https://cdn.example.com/s/x.js"},
			{Kind: model.KindAssetMissing, Severity: model.SeverityError, Instances: []string{"a", "b"}, URL: "https://cdn.example.com/s/y.js"},
		},
	}
	groups := []model.DiagnosisGroup{
		{ID: 1, Instances: []string{"a", "b"}, MatchesRelease: true, AssetsMissing: 2, Attribution: model.Attribution{How: model.HowRelease, Digest: "sha256:" + strings.Repeat("1", 64)}},
		{ID: 2, Instances: []string{"c"}, Attribution: model.Attribution{How: model.HowNone, Tags: []string{}}},
	}
	t.Run("assets not uploaded", func(t *testing.T) {
		cs := causes(causeInput{rep: rep, groups: groups, rel: &model.Release{Version: "v1", Source: model.SourceRecord}, repo: "r.example.com/web", tag: "v1"})
		var kinds []string
		for _, c := range cs {
			kinds = append(kinds, c.Kind)
		}
		if !slices.Equal(kinds, []string{model.CauseUnknownBuild, model.CauseAssetsNotUploaded}) {
			t.Fatalf("causes %v", kinds)
		}
		up := cs[1]
		if !slices.Equal(up.Groups, []int{1}) || !strings.Contains(up.Actions[0], "Upload the 2 missing files") || !strings.Contains(up.Actions[0], "https://cdn.example.com/s/x.js https://cdn.example.com/s/y.js") {
			t.Errorf("assets-not-uploaded: %+v", up)
		}
		if cs[0].NotEnoughEvidence != "" || !strings.Contains(cs[0].Summary, "no recent tag of r.example.com/web") {
			t.Errorf("unknown-build: %+v", cs[0])
		}
	})
	t.Run("no release image", func(t *testing.T) {
		cs := causes(causeInput{rep: rep, groups: groups, rel: &model.Release{Source: model.SourceConsensus}})
		if len(cs) != 2 || cs[0].Kind != model.CauseUnknownBuild || !strings.Contains(cs[0].NotEnoughEvidence, "no release image is configured") {
			t.Errorf("causes %+v", cs)
		}
	})
	t.Run("a healthy fleet has no cause", func(t *testing.T) {
		ok := &model.Report{Instances: rep.Instances}
		healthy := groups[0]
		healthy.Instances, healthy.AssetsMissing = []string{"a", "b", "c"}, 0
		if cs := causes(causeInput{rep: ok, groups: []model.DiagnosisGroup{healthy}, rel: &model.Release{Source: model.SourceRecord}}); len(cs) != 0 {
			t.Errorf("causes %+v", cs)
		}
	})
}
