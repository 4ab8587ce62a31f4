package diagnose

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry"
)

func groupOf(t *testing.T, d *model.Diagnosis, id string) model.DiagnosisGroup {
	t.Helper()
	for _, g := range d.Groups {
		if slices.Contains(g.Instances, id) {
			return g
		}
	}
	t.Fatalf("no group holds %s", id)
	return model.DiagnosisGroup{}
}

func causeOf(d *model.Diagnosis, kind string) *model.Cause {
	for i := range d.Causes {
		if d.Causes[i].Kind == kind {
			return &d.Causes[i]
		}
	}
	return nil
}

func TestDiagnoseIncident(t *testing.T) {
	s := startScenario(t, nil)
	d := s.diagnose(t)
	if d.Schema != model.DiagnosisSchema || d.Verdict != model.VerdictFail || d.Report != s.res.Report {
		t.Fatalf("schema %q verdict %q", d.Schema, d.Verdict)
	}
	if len(d.Groups) != 4 || !slices.Equal(d.Unreachable, []string{"web-9"}) {
		t.Fatalf("groups %d, unreachable %v", len(d.Groups), d.Unreachable)
	}
	good, bad, old, hot := groupOf(t, d, "web-1"), groupOf(t, d, "web-5"), groupOf(t, d, "web-7"), groupOf(t, d, "web-8")
	if !slices.Equal(good.Instances, []string{"web-1", "web-2", "web-3", "web-4"}) || !good.MatchesRelease ||
		good.Attribution.How != model.HowRelease || good.Attribution.Digest != s.w.Released.Digest || !good.Attribution.Confirmed {
		t.Errorf("release group: %+v", good)
	}
	if !slices.Equal(bad.Instances, []string{"web-5", "web-6"}) || bad.Attribution.How != model.HowReportedDigest ||
		bad.Attribution.Digest != s.w.Repushed.Digest || !bad.Attribution.Confirmed || !slices.Equal(bad.Attribution.Tags, []string{"v2.31.0"}) ||
		bad.AssetsMissing != len(s.w.Bad.Assets) || !slices.Equal(bad.ClaimedVersions, []string{"v2.31.0"}) {
		t.Errorf("re-pushed group: %+v", bad)
	}
	if bad.LaunchedFirst == nil || !bad.LaunchedFirst.Equal(base.Add(6*60*60e9+5*60e9)) || !slices.Equal(bad.Labels["az"], []string{"us-east-1a", "us-east-1b"}) {
		t.Errorf("re-pushed group launch window %v, labels %v", bad.LaunchedFirst, bad.Labels)
	}
	if old.Attribution.How != model.HowReportedDigest || !slices.Equal(old.Attribution.Tags, []string{"v2.30.0"}) || old.Attribution.Created == nil || old.AssetsMissing != 0 {
		t.Errorf("old group: %+v", old.Attribution)
	}
	if hot.Attribution.How != model.HowNone || hot.Attribution.Digest != "" || !strings.Contains(hot.Attribution.Note, "no recent tag") {
		t.Errorf("hotfix group: %+v", hot.Attribution)
	}
	want := map[string][]int{
		model.CauseTagRePushed: {bad.ID}, model.CauseOldRelease: {old.ID}, model.CauseUnknownBuild: {hot.ID},
		model.CauseClaimsUnreliable: {bad.ID, hot.ID}, model.CauseInstancesUnreachable: {},
	}
	if len(d.Causes) != len(want) {
		t.Errorf("causes: %+v", d.Causes)
	}
	for kind, groups := range want {
		c := causeOf(d, kind)
		if c == nil {
			t.Errorf("no %s cause", kind)
			continue
		}
		if !slices.Equal(c.Groups, groups) || len(c.Evidence) == 0 || len(c.Actions) == 0 || c.Summary == "" {
			t.Errorf("%s: %+v", kind, c)
		}
	}
	rp := causeOf(d, model.CauseTagRePushed)
	if rp.NotEnoughEvidence != "" || !strings.Contains(strings.Join(rp.Evidence, "\n"), "after the release was recorded at 2021-04-06 08:50 UTC") ||
		!strings.Contains(rp.Actions[0], "@"+s.w.Released.Digest) {
		t.Errorf("tag-re-pushed: %+v", rp)
	}
	if u := causeOf(d, model.CauseInstancesUnreachable); !slices.Equal(u.Instances, []string{"web-9"}) || !strings.Contains(u.Evidence[0], "az=us-east-1c (0 of the 8") {
		t.Errorf("unreachable: %+v", u)
	}
	if d.Registry.Requests == 0 || d.Registry.TagsListed != 4 || d.Registry.TagsSearched != 4 || len(d.Registry.Errors) != 0 {
		t.Errorf("registry work: %+v", d.Registry)
	}
}

// Without launch times (a static fleet), the re-push is said to lack evidence, not guessed.
func TestDiagnoseWithoutLaunchTimes(t *testing.T) {
	s := startScenario(t, func(w *testkit.World, _ *testkit.Fleet) []model.Target {
		tg := w.Fleet.Targets()
		for i := range tg {
			tg[i].LaunchedAt = time.Time{}
		}
		return tg
	})
	d := s.diagnose(t)
	c := causeOf(d, model.CauseTagRePushed)
	if c == nil || !strings.Contains(c.NotEnoughEvidence, "launch times are unknown") || groupOf(t, d, "web-5").LaunchedFirst != nil {
		t.Fatalf("tag-re-pushed without launch times: %+v", c)
	}
	if strings.Contains(strings.Join(c.Evidence, "\n"), "launched") {
		t.Errorf("evidence speaks of launch times it does not have: %v", c.Evidence)
	}
}

// A group that makes no digest claim is found by searching the tags, newest first, and no
// further than diagnose.search_tags.
func TestDiagnoseTagSearch(t *testing.T) {
	noClaim := func(w *testkit.World, extra *testkit.Fleet) []model.Target {
		extra.Instance("web-7").Set(func(s *testkit.Spec) { s.Digest = "" })
		return append(w.Fleet.Targets(), extra.Targets()...)
	}
	for _, tc := range []struct {
		name     string
		limit    int
		how      string
		searched int
	}{
		{"all tags", 20, model.HowTagSearch, 4},
		{"only the newest", 1, model.HowNone, 1},
		{"none", 0, model.HowNone, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startScenario(t, noClaim)
			s.cfg.Diagnose.SearchTags = &tc.limit
			d := s.diagnose(t)
			a := groupOf(t, d, "web-7").Attribution
			if a.How != tc.how || d.Registry.TagsSearched != tc.searched {
				t.Fatalf("attribution %+v, registry %+v", a, d.Registry)
			}
			if tc.how == model.HowTagSearch && (!slices.Equal(a.Tags, []string{"v2.30.0"}) || !a.Confirmed || a.Created == nil) {
				t.Errorf("attribution %+v", a)
			}
			kind := model.CauseOldRelease
			if tc.how == model.HowNone {
				kind = model.CauseUnknownBuild
			}
			if c := causeOf(d, kind); c == nil || !slices.Contains(c.Groups, groupOf(t, d, "web-7").ID) {
				t.Errorf("no %s cause for web-7: %+v", kind, d.Causes)
			}
		})
	}
}

// The registry cache keeps manifests, configs and layer lookups: a second diagnosis asks the
// registry only what can change (tags).
func TestDiagnoseRegistryCache(t *testing.T) {
	s := startScenario(t, nil)
	dir := t.TempDir()
	var reqs []int
	for range 2 {
		d, err := Diagnose(context.Background(), s.cfg, Input{Release: s.res.Release, Report: s.res.Report}, Options{Registry: []registry.Option{registry.WithCacheDir(dir)}})
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, d.Registry.Requests)
	}
	if reqs[1] >= reqs[0] || reqs[1] == 0 {
		t.Fatalf("registry requests without and with a warm cache: %v", reqs)
	}
}

// Instances as the EC2 fleet source reports them (instance IDs, Auto Scaling group, zone,
// launch time): the actions are ready AWS CLI commands.
func TestDiagnoseEC2Actions(t *testing.T) {
	ids := map[string]string{}
	s := startScenario(t, func(w *testkit.World, extra *testkit.Fleet) []model.Target {
		tg := append(w.Fleet.Targets(), extra.Targets()...)
		for i := range tg {
			id := fmt.Sprintf("i-0%016x", i+1)
			ids[tg[i].ID] = id
			tg[i].ID, tg[i].Source = id, "ec2"
			tg[i].Labels = map[string]string{"az": tg[i].Labels["az"], "asg": "store-web-prod", "instance_type": "m7g.large"}
		}
		tg[6].Labels["asg"] = "" // web-7: a hand-launched instance outside the group
		return tg
	})
	s.cfg.Fleet.EC2 = &config.EC2{Region: "us-east-1"}
	d := s.diagnose(t)
	all := func(kind string) string {
		c := causeOf(d, kind)
		if c == nil {
			t.Fatalf("no %s cause: %+v", kind, d.Causes)
		}
		return strings.Join(c.Actions, "\n")
	}
	want := map[string]string{
		model.CauseTagRePushed:          "for id in " + ids["web-5"] + " " + ids["web-6"] + "; do aws autoscaling terminate-instance-in-auto-scaling-group --region us-east-1 --instance-id \"$id\" --no-should-decrement-desired-capacity; done",
		model.CauseOldRelease:           "aws ec2 terminate-instances --region us-east-1 --instance-ids " + ids["web-7"],
		model.CauseUnknownBuild:         "aws autoscaling terminate-instance-in-auto-scaling-group --region us-east-1 --instance-id " + ids["web-8"] + " --no-should-decrement-desired-capacity",
		model.CauseInstancesUnreachable: "aws ec2 describe-instance-status --region us-east-1 --include-all-instances --instance-ids " + ids["web-9"],
	}
	for kind, cmd := range want {
		if got := all(kind); !strings.Contains(got, cmd) {
			t.Errorf("%s actions:\n%s\nwant a command containing:\n%s", kind, got, cmd)
		}
	}
	if g := groupOf(t, d, ids["web-5"]); !slices.Equal(g.Labels["asg"], []string{"store-web-prod"}) || !slices.Equal(g.Labels["instance_type"], []string{"m7g.large"}) {
		t.Errorf("labels of the re-pushed group: %v", g.Labels)
	}
}
