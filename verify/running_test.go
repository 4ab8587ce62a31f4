package verify

import (
	"slices"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

func TestJudgeRunningDigests(t *testing.T) {
	rel := release()
	rel.Image = "registry.example.com/web:v2"
	in := Input{
		Release: rel,
		Observations: []model.Observation{
			obs("honest", "A"), obs("liar", "A"), obs("unknown", "A"), obs("cached-elsewhere", "A"),
		},
		Running: []model.RunningDigest{
			{TargetID: "honest", Source: "ssm", ImageID: configDigest, RepoDigests: []string{"registry.example.com/web@" + relDigest}},
			{TargetID: "liar", Source: "ssm", ImageID: otherDigest, RepoDigests: []string{"registry.example.com/web@" + otherDigest}},
			{TargetID: "unknown", Source: "ssm", Unknown: "SSM cannot run commands on unknown"},
			// A mirror's repo digest is not the release repository's, but the image ID is in the set.
			{TargetID: "cached-elsewhere", Source: "docker", ImageID: configDigest, RepoDigests: []string{"mirror.example.com/web@" + otherDigest}},
		},
	}
	rep := Judge(in)
	got := kindsOf(rep)
	wantKinds := []want{
		{model.KindDigestMismatch, "liar"},
		{model.KindDigestUnchecked, "unknown"},
		{model.KindVersionLie, "liar"},
	}
	if !slices.Equal(got, wantKinds) {
		t.Errorf("findings %v, want %v", got, wantKinds)
	}
	running := map[string]string{}
	for _, i := range rep.Instances {
		running[i.ID] = i.RunningDigest
	}
	if running["honest"] != relDigest || running["liar"] != otherDigest || running["unknown"] != "" || running["cached-elsewhere"] != configDigest {
		t.Errorf("running digests %v", running)
	}
	for _, f := range rep.Findings {
		if f.Kind == model.KindDigestUnchecked && f.Severity != model.SeverityWarning {
			t.Errorf("digest-unchecked is a warning: %+v", f)
		}
	}
}
