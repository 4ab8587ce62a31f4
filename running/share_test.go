package running

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/polygraph-dev/polygraph/model"
)

// TestResultsShareTheStringsOfOneImage: results naming the same image share its strings, so
// a fleet's evidence costs a result per instance and the image's strings once; other images
// keep their own, and nothing read changes.
func TestResultsShareTheStringsOfOneImage(t *testing.T) {
	const id = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const repo = "registry.example.test/store@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	output := "noise " + id + " " + repo + " noise" // SSM's results are pieces of an output like this
	piece := func(s string) string { i := strings.Index(output, s); return output[i : i+len(s)] }
	rs := []model.RunningDigest{
		{TargetID: "i-1", ImageID: piece(id), RepoDigests: []string{piece(repo)}},
		{TargetID: "i-2", ImageID: strings.Clone(id), RepoDigests: []string{strings.Clone(repo)}},
		{TargetID: "i-3", ImageID: "sha256:33", RepoDigests: []string{repo, "other@sha256:44"}},
		{TargetID: "i-4", Unknown: "SSM could not reach i-4"},
	}
	want := slices.Clone(rs)
	for i := range want {
		want[i].RepoDigests = slices.Clone(rs[i].RepoDigests)
	}
	share(rs)
	for i := range rs {
		if rs[i].TargetID != want[i].TargetID || rs[i].ImageID != want[i].ImageID || !slices.Equal(rs[i].RepoDigests, want[i].RepoDigests) || rs[i].Unknown != want[i].Unknown {
			t.Errorf("result %d changed: %+v, want %+v", i, rs[i], want[i])
		}
	}
	if unsafe.StringData(rs[0].ImageID) != unsafe.StringData(rs[1].ImageID) || &rs[0].RepoDigests[0] != &rs[1].RepoDigests[0] {
		t.Error("i-1 and i-2 run one image but hold strings of their own")
	}
	if strings.Contains(output, rs[0].ImageID) && unsafe.StringData(rs[0].ImageID) == unsafe.StringData(output[6:]) {
		t.Error("i-1's image ID still points into the whole output")
	}
	if &rs[2].RepoDigests[0] == &rs[0].RepoDigests[0] {
		t.Error("i-3's repository digests (another list) share i-1's")
	}
}
