package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/awsfake"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

// TestDiagnoseEC2 diagnoses a fleet discovered from EC2 (an Auto Scaling group in the AWS
// fake), with SSM reporting what each instance runs: four instances on the release, one
// launched after the tag was re-pushed that runs the rebuild, and one still on the older
// release v2.30.0. The real binary must find the three groups, attribute each by its running
// digest, and name tag-re-pushed (checked against the launch times) and old-release with
// ready AWS CLI commands.
func TestDiagnoseEC2(t *testing.T) {
	ctx := context.Background()
	w, err := testkit.StartIncident(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Fleet.Close()
	recorded := w.Record.RecordedAt
	old := testkit.CRABuild("store-web v2.30.0", 24, 8)
	oldPushed, _, err := testkit.PublishAt(ctx, w.Registry.Ref("store-web:v2.30.0"), old, recorded.Add(-7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	w.CDN.Add(old.Assets...)
	const (
		rebuilt  = "i-0000000000000005"
		oldInst  = "i-0000000000000006"
		asgName  = "store-web-prod"
		fleetLen = 6
	)
	var specs []testkit.Spec
	for i := 1; i <= fleetLen; i++ {
		s := testkit.Spec{ID: fmt.Sprintf("i-%016d", i), Build: w.Good, Version: w.Version, Digest: w.Released.Digest}
		switch s.ID {
		case rebuilt:
			s.Build = w.Bad // claims the release's version and digest: a liar only SSM catches
		case oldInst:
			s.Build, s.Version, s.Digest = old, "v2.30.0", oldPushed.Digest
		}
		specs = append(specs, s)
	}
	if w.Fleet, err = testkit.StartFleetWith(specs, testkit.FleetOptions{SamePort: true}); err != nil {
		t.Fatal(err)
	}
	f := awsfake.New()
	defer f.Close()
	repo := strings.Split(w.Image, ":v")[0]
	port := 0
	for i, in := range w.Fleet.Instances {
		host, p, _ := net.SplitHostPort(in.Address)
		fmt.Sscan(p, &port)
		launched, pushed := recorded.Add(time.Duration(10+i)*time.Minute), w.Released
		switch in.ID {
		case rebuilt:
			launched, pushed = recorded.Add(6*time.Hour), w.Repushed
		case oldInst:
			launched, pushed = recorded.Add(-6*24*time.Hour), oldPushed
		}
		f.EC2.Add(awsfake.Instance{ID: in.ID, State: "running", PrivateIP: host, AZ: []string{"us-east-1a", "us-east-1b"}[i%2],
			InstanceType: "c7g.large", LaunchTime: launched, Tags: map[string]string{"aws:autoscaling:groupName": asgName}})
		f.SSM.Manage(in.ID, awsfake.SSMInstance{Env: map[string]string{"FAKE_CONTAINER": "web", "FAKE_IMAGE_REF": w.Image,
			"FAKE_IMAGE_ID": pushed.Images[0].Config, "FAKE_REPO_DIGESTS": repo + "@" + pushed.Digest}})
	}
	dir := t.TempDir()
	data, _ := json.Marshal(w.Record)
	if err := os.WriteFile(filepath.Join(dir, "release.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "polygraph.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `release:
  image: %q
  record: release.json
  manifest_file: %s
fleet:
  ec2:
    region: us-east-1
    auto_scaling_groups: [%s]
    port: %d
probe:
  host: store.example.com
  version:
    header: X-App-Version
  digest:
    source: header
    header: X-Image-Digest
  runtime:
    source: ssm
    container: web
  timeout: 2s
  retries: 1
cdn:
  base_urls:
    - %s
`, w.Image, testkit.ManifestFile, asgName, port, w.CDN.URL), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(f.Env("us-east-1"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "NO_COLOR=1")

	stdout, stderr, code := polygraph(t, env, "diagnose", "--config", cfg, "--output", "json", "--timeout", "30s")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s\n%s", code, stderr, stdout)
	}
	var d model.Diagnosis
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	byInstance := map[string]model.DiagnosisGroup{}
	for _, g := range d.Groups {
		for _, id := range g.Instances {
			byInstance[id] = g
		}
	}
	good, bad, older := byInstance["i-0000000000000001"], byInstance[rebuilt], byInstance[oldInst]
	if len(d.Groups) != 3 || len(good.Instances) != 4 || !good.MatchesRelease || good.Attribution.How != model.HowRelease {
		t.Fatalf("groups %+v", d.Groups)
	}
	if a := bad.Attribution; a.How != model.HowRunningDigest || a.Digest != w.Repushed.Digest || !a.Confirmed || !slices.Equal(a.Tags, []string{"v2.31.0"}) {
		t.Errorf("re-pushed group attribution %+v", a)
	}
	if a := older.Attribution; a.How != model.HowRunningDigest || a.Digest != oldPushed.Digest || !slices.Equal(a.Tags, []string{"v2.30.0"}) {
		t.Errorf("older group attribution %+v", a)
	}
	if !slices.Equal(bad.Labels["asg"], []string{asgName}) || bad.LaunchedFirst == nil || !bad.LaunchedFirst.Equal(recorded.Add(6*time.Hour)) {
		t.Errorf("re-pushed group labels %v, launched %v", bad.Labels, bad.LaunchedFirst)
	}
	causes := map[string]model.Cause{}
	for _, c := range d.Causes {
		causes[c.Kind] = c
	}
	rp, ok := causes[model.CauseTagRePushed]
	if !ok || !slices.Equal(rp.Groups, []int{bad.ID}) || rp.NotEnoughEvidence != "" ||
		!strings.Contains(strings.Join(rp.Actions, "\n"), "aws autoscaling terminate-instance-in-auto-scaling-group --region us-east-1 --instance-id "+rebuilt+" --no-should-decrement-desired-capacity") {
		t.Errorf("tag-re-pushed: %+v", rp)
	}
	if or, ok := causes[model.CauseOldRelease]; !ok || !slices.Equal(or.Groups, []int{older.ID}) ||
		!strings.Contains(strings.Join(or.Actions, "\n"), "--instance-id "+oldInst) {
		t.Errorf("old-release: %+v", or)
	}
	if cu, ok := causes[model.CauseClaimsUnreliable]; !ok || !slices.Contains(cu.Groups, bad.ID) {
		t.Errorf("claims-unreliable: %+v", cu)
	}

	text, _, code := polygraph(t, env, "diagnose", "--config", cfg, "--timeout", "30s")
	for _, want := range []string{"1. tag-re-pushed (group 2)", "old-release (group 3)", "asg store-web-prod", "by running-digest"} {
		if code != 1 || !strings.Contains(text, want) {
			t.Errorf("text (exit %d) lacks %q:\n%s", code, want, text)
		}
	}
}
