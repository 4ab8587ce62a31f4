package running

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/internal/awsfake"
	"github.com/polygraph-dev/polygraph/model"
)

func fakeSSM(t testing.TB) (*awsfake.Server, *ssm.Client) {
	t.Helper()
	f := awsfake.New()
	t.Cleanup(f.Close)
	awsfake.Setenv(t, f.Env("us-east-1"))
	cfg, err := awsconf.Load(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return f, ssm.NewFromConfig(cfg)
}

var (
	releaseID  = "sha256:" + strings.Repeat("a1", 32)
	releaseTop = "sha256:" + strings.Repeat("b2", 32)
	otherID    = "sha256:" + strings.Repeat("c3", 32)
	otherTop   = "sha256:" + strings.Repeat("d4", 32)
)

func runs(id, top string) awsfake.SSMInstance {
	return awsfake.SSMInstance{Env: map[string]string{
		"FAKE_CONTAINER": "web", "FAKE_LABEL": "app=web", "FAKE_IMAGE_REF": "registry.example.com/web:v1",
		"FAKE_IMAGE_ID": id, "FAKE_REPO_DIGESTS": "registry.example.com/web@" + top,
	}}
}

func fast() []SSMOption {
	return []SSMOption{WithPolling(10*time.Millisecond, 40*time.Millisecond), WithRegion("us-east-1")}
}

func TestSSMEveryEngine(t *testing.T) {
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			f, c := fakeSSM(t)
			f.SSM.Manage("i-0000000000000001", runs(releaseID, releaseTop))
			f.SSM.Manage("i-0000000000000002", runs(otherID, otherTop))
			src, err := NewSSM(c, "web", append(fast(), WithEngine(engine))...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := src.RunningDigests(context.Background(), []model.Target{{ID: "i-0000000000000001"}, {ID: "i-0000000000000002"}})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []struct{ id, top string }{{releaseID, releaseTop}, {otherID, otherTop}} {
				r := got[i]
				if r.Unknown != "" || r.Source != "ssm" {
					t.Fatalf("result %d: %+v", i, r)
				}
				if engine != "containerd" && r.ImageID != want.id {
					t.Errorf("result %d: image ID %q, want %q", i, r.ImageID, want.id)
				}
				if len(r.RepoDigests) != 1 || !strings.HasSuffix(r.RepoDigests[0], "@"+want.top) {
					t.Errorf("result %d: repo digests %v, want one ending @%s", i, r.RepoDigests, want.top)
				}
			}
			if n := len(f.Calls("SendCommand")); n != 1 {
				t.Errorf("%d SendCommand calls, want 1", n)
			}
		})
	}
}

func TestSSMUnknowns(t *testing.T) {
	f, c := fakeSSM(t)
	f.SSM.Manage("i-0000000000000001", runs(releaseID, releaseTop))
	noContainer := runs(releaseID, releaseTop)
	noContainer.Env["FAKE_CONTAINER"] = "api"
	f.SSM.Manage("i-0000000000000002", noContainer)
	src, err := NewSSM(c, "web", fast()...)
	if err != nil {
		t.Fatal(err)
	}
	targets := []model.Target{{ID: "i-0000000000000001"}, {ID: "i-0000000000000002"}, {ID: "i-00000000000000ff"}, {ID: "127.0.1.7:8080"}, {ID: "i-0000000000000001:9090"}}
	got, err := src.RunningDigests(context.Background(), targets)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"",
		"No such container: web",
		"SSM cannot run commands on i-00000000000000ff (not managed by SSM, or not running)",
		"127.0.1.7:8080 is not an EC2 instance: SSM needs an instance ID",
		"",
	}
	for i, w := range want {
		if w == "" && (got[i].Unknown != "" || got[i].ImageID != releaseID) || !strings.Contains(got[i].Unknown, w) {
			t.Errorf("%s: %+v, want unknown %q", targets[i].ID, got[i], w)
		}
		if got[i].TargetID != targets[i].ID {
			t.Errorf("result %d is for %q, want %q", i, got[i].TargetID, targets[i].ID)
		}
	}
	sends := f.Calls("SendCommand")
	if len(sends) != 2 || strings.Contains(string(sends[1].JSON), "i-00000000000000ff") {
		t.Errorf("want the command sent again without the invalid instance: %d calls", len(sends))
	}
}

func TestSSMInvocationNotYetVisible(t *testing.T) {
	f, c := fakeSSM(t)
	f.SSM.Manage("i-0000000000000001", runs(releaseID, releaseTop))
	f.SSM.SetVisibleAfter(60 * time.Millisecond)
	f.Fail("ListCommandInvocations", "InvocationDoesNotExist", "", 2)
	src, _ := NewSSM(c, "web", fast()...)
	got, err := src.RunningDigests(context.Background(), []model.Target{{ID: "i-0000000000000001"}})
	if err != nil || got[0].ImageID != releaseID {
		t.Fatalf("got %+v, %v", got, err)
	}
	if n := len(f.Calls("ListCommandInvocations")); n < 3 {
		t.Errorf("%d ListCommandInvocations calls: InvocationDoesNotExist must be polled again", n)
	}
}

func TestSSMDeadline(t *testing.T) {
	f, c := fakeSSM(t)
	f.SSM.Manage("i-0000000000000001", runs(releaseID, releaseTop))
	f.SSM.SetVisibleAfter(time.Hour)
	src, _ := NewSSM(c, "web", fast()...)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	got, err := src.RunningDigests(ctx, []model.Target{{ID: "i-0000000000000001"}})
	if err != nil || !strings.Contains(got[0].Unknown, "not yet visible when the run's deadline passed") {
		t.Fatalf("got %+v, %v", got, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v past a 150ms deadline", d)
	}
}

func TestSSMAccessDeniedIsAnError(t *testing.T) {
	f, c := fakeSSM(t)
	f.SSM.Manage("i-0000000000000001", runs(releaseID, releaseTop))
	f.Fail("SendCommand", "AccessDeniedException", "User: arn:aws:iam::123456789012:user/ci is not authorized to perform: ssm:SendCommand", 1)
	src, _ := NewSSM(c, "web", fast()...)
	_, err := src.RunningDigests(context.Background(), []model.Target{{ID: "i-0000000000000001"}})
	var ae *awsconf.Error
	if !errors.As(err, &ae) || ae.Action != "ssm:SendCommand" || !strings.Contains(err.Error(), "denied in us-east-1") {
		t.Fatalf("err = %v", err)
	}
}

func TestSSMBatchesOf50AndOneListPerCommand(t *testing.T) {
	f, c := fakeSSM(t)
	f.SSM.SetRunner(cannedRunner)
	var targets []model.Target
	for i := range 120 {
		id := fmt.Sprintf("i-%016x", i+1)
		f.SSM.Manage(id, awsfake.SSMInstance{})
		targets = append(targets, model.Target{ID: id})
	}
	src, _ := NewSSM(c, "web", fast()...)
	got, err := src.RunningDigests(context.Background(), targets)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if r.ImageID != releaseID {
			t.Fatalf("%+v", r)
		}
	}
	sends := f.Calls("SendCommand")
	if len(sends) != 3 {
		t.Errorf("%d SendCommand calls for 120 instances, want 3", len(sends))
	}
	if n := len(f.Calls("ListCommandInvocations")); n > 3*3 {
		t.Errorf("%d ListCommandInvocations calls: want one per command and round", n)
	}
}

func cannedRunner(context.Context, string, string, map[string]string) (string, int) {
	return "polygraph-runtime v1\nimage-ref registry.example.com/web:v1\nimage-id " + releaseID + "\nrepo-digest registry.example.com/web@" + releaseTop + "\nend\n", 0
}

func TestParseOutputSurvivesTruncation(t *testing.T) {
	full := "polygraph-runtime v1\nimage-ref web\nimage-id " + releaseID + "\n"
	for range 40 {
		full += "repo-digest registry.example.com/web@" + releaseTop + "\n"
	}
	cut := full[:awsfake.SSMOutputLimit]
	p := parseOutput(cut)
	if p.imageID != releaseID || p.complete || len(p.repoDigests) == 0 {
		t.Fatalf("%+v", p)
	}
	for _, d := range p.repoDigests {
		if !strings.HasSuffix(d, releaseTop) {
			t.Errorf("a cut line was read: %q", d)
		}
	}
	if got := parseOutput("image-id " + strings.ToUpper(strings.TrimPrefix(releaseID, "sha256:")) + "\n"); got.imageID != releaseID {
		t.Errorf("bare upper-case hex: %q", got.imageID)
	}
}

func TestScriptIsPlain(t *testing.T) {
	for _, e := range Engines {
		s := Script(e, "label=app=web")
		for _, bad := range []string{"eval", "curl", "wget", "base64", "| sh", "|sh", "rm ", "`"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s script contains %q", e, bad)
			}
		}
	}
	for _, c := range []string{"web'; rm -rf /", "$(id)", "a b", ""} {
		if ValidContainer(c) {
			t.Errorf("%q accepted as a container name", c)
		}
	}
	if _, err := NewSSM(nil, "web", WithEngine("lxc")); err == nil {
		t.Error("unknown engine accepted")
	}
	if !slices.Contains(Engines, "containerd") {
		t.Error("containerd missing")
	}
}

// When SSM does not say which instances are invalid, the batch is halved until it does.
func TestSSMInvalidInstanceNamedByNobody(t *testing.T) {
	f, c := fakeSSM(t)
	f.SSM.SetRunner(cannedRunner)
	f.SSM.SetQuietInvalid(true)
	var targets []model.Target
	for i := range 4 {
		id := fmt.Sprintf("i-%016x", i+1)
		if i != 2 {
			f.SSM.Manage(id, awsfake.SSMInstance{})
		}
		targets = append(targets, model.Target{ID: id})
	}
	src, _ := NewSSM(c, "web", fast()...)
	got, err := src.RunningDigests(context.Background(), targets)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		if i == 2 {
			if !strings.Contains(r.Unknown, "SSM cannot run commands on i-0000000000000003") {
				t.Errorf("unmanaged: %+v", r)
			}
		} else if r.ImageID != releaseID {
			t.Errorf("%s: %+v", r.TargetID, r)
		}
	}
	// [1 2 3 4] fails, [1 2] runs, [3 4] fails, [3] fails alone, [4] runs.
	if n := len(f.Calls("SendCommand")); n != 5 {
		t.Errorf("%d SendCommand calls, want 5", n)
	}
}
