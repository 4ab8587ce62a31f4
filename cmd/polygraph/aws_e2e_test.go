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

// awsWorld is the incident's release and CDN, a fleet of four instances on one port that all
// serve the release and claim it, the EC2/ELBv2/SSM fake that lists them as an Auto Scaling
// group and a target group, and SSM answers in which i-0…3 runs the re-pushed image.
type awsWorld struct {
	w    *testkit.World
	aws  *awsfake.Server
	port int
	dir  string
}

const liar = "i-0000000000000003"

func startAWSWorld(t *testing.T) *awsWorld {
	t.Helper()
	w, err := testkit.StartIncident(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.Fleet.Close()
	var specs []testkit.Spec
	for i := 1; i <= 4; i++ {
		specs = append(specs, testkit.Spec{ID: fmt.Sprintf("i-%016d", i), Build: w.Good, Version: w.Version, Digest: w.Released.Digest})
	}
	if w.Fleet, err = testkit.StartFleetWith(specs, testkit.FleetOptions{SamePort: true}); err != nil {
		t.Fatal(err)
	}
	f := awsfake.New()
	t.Cleanup(f.Close)
	aw := &awsWorld{w: w, aws: f, dir: t.TempDir()}
	repo := strings.Split(w.Image, ":v")[0]
	var registered []awsfake.RegisteredTarget
	for i, in := range w.Fleet.Instances {
		host, port, _ := net.SplitHostPort(in.Address)
		fmt.Sscan(port, &aw.port)
		f.EC2.Add(awsfake.Instance{ID: in.ID, State: "running", PrivateIP: host, AZ: "us-east-1a", InstanceType: "c7g.large",
			AMI: "ami-0abc", LaunchTime: time.Date(2026, 11, 30, 9, i, 0, 0, time.UTC),
			// Every instance's deploy tag claims the release, the liar's too.
			Tags: map[string]string{"aws:autoscaling:groupName": "store-web-prod", "image-digest": w.Released.Digest}})
		env := map[string]string{"FAKE_CONTAINER": "web", "FAKE_IMAGE_REF": w.Image,
			"FAKE_IMAGE_ID": w.Released.Images[0].Config, "FAKE_REPO_DIGESTS": repo + "@" + w.Released.Digest}
		if in.ID == liar {
			env["FAKE_IMAGE_ID"], env["FAKE_REPO_DIGESTS"] = w.Repushed.Images[0].Config, repo+"@"+w.Repushed.Digest
		}
		f.SSM.Manage(in.ID, awsfake.SSMInstance{Env: env})
		registered = append(registered, awsfake.RegisteredTarget{ID: in.ID, Port: aw.port, Health: "healthy"})
	}
	// Not part of the fleet: terminated, and another group's instance.
	f.EC2.Add(awsfake.Instance{ID: "i-0000000000000098", State: "terminated", Tags: map[string]string{"aws:autoscaling:groupName": "store-web-prod"}},
		awsfake.Instance{ID: "i-0000000000000099", State: "running", PrivateIP: "127.0.0.1", Tags: map[string]string{"aws:autoscaling:groupName": "other"}})
	f.ELBv2.Add(awsfake.TargetGroup{ARN: tgARN, Name: "store-web", Type: "instance", Port: 80, Targets: registered})
	data, _ := json.Marshal(w.Record)
	if err := os.WriteFile(filepath.Join(aw.dir, "release.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return aw
}

const tgARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/store-web/0123456789abcdef"

// headerClaim is the probe.digest section of a digest claimed in a response header.
const headerClaim = "  digest:\n    source: header\n    header: X-Image-Digest"

// config writes a polygraph.yaml with the given fleet section and returns its path.
func (a *awsWorld) config(t *testing.T, fleetYAML string) string {
	return a.configClaim(t, fleetYAML, headerClaim)
}

// configClaim is config with another probe.digest section.
func (a *awsWorld) configClaim(t *testing.T, fleetYAML, digestYAML string) string {
	t.Helper()
	repo := strings.Split(a.w.Image, ":v")[0]
	cfg := fmt.Sprintf(`release:
  image: %q
  version: %s
  record: release.json
fleet:
%s
probe:
  host: store.example.com
  version:
    header: X-App-Version
%s
  runtime:
    source: ssm
    container: web
  timeout: 2s
  retries: 1
cdn:
  base_urls:
    - %s
`, repo+"@"+a.w.Released.Digest, a.w.Version, fleetYAML, digestYAML, a.w.CDN.URL)
	path := filepath.Join(a.dir, "polygraph.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (a *awsWorld) verify(t *testing.T, cfg string, env ...string) (*model.Report, string, int) {
	t.Helper()
	stdout, stderr, code := polygraph(t, append(a.aws.Env("us-east-1"), env...), "verify", "--config", cfg, "--output", "json", "--timeout", "30s")
	var rep model.Report
	if code == 0 || code == 1 {
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("exit %d, report: %v\n%s\nstderr: %s", code, err, stdout, stderr)
		}
	}
	return &rep, stderr, code
}

// findingsOf lists "kind instance" for every finding.
func findingsOf(rep *model.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, string(f.Kind)+" "+f.Instance)
	}
	slices.Sort(out)
	return out
}

func checkLieCaught(t *testing.T, rep *model.Report, a *awsWorld) {
	t.Helper()
	want := []string{"digest-mismatch " + liar, "version-lie " + liar}
	if got := findingsOf(rep); !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	if len(rep.Instances) != 4 {
		t.Fatalf("%d instances, want the 4 running ones of the group", len(rep.Instances))
	}
	for _, in := range rep.Instances {
		want := a.w.Released.Digest
		if in.ID == liar {
			want = a.w.Repushed.Digest
		}
		if in.RunningDigest != want {
			t.Errorf("%s running_digest %s, want %s", in.ID, in.RunningDigest, want)
		}
	}
}

func TestVerifyAutoScalingGroupWithSSM(t *testing.T) {
	a := startAWSWorld(t)
	cfg := a.config(t, fmt.Sprintf("  ec2:\n    region: us-east-1\n    auto_scaling_groups: [store-web-prod]\n    port: %d", a.port))
	rep, stderr, code := a.verify(t, cfg)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the lie is an error finding); stderr: %s", code, stderr)
	}
	checkLieCaught(t, rep, a)
	in := rep.Instances[0]
	if in.Labels["asg"] != "store-web-prod" || in.Labels["instance_type"] != "c7g.large" || in.LaunchedAt == nil {
		t.Errorf("instance labels and launch time: %+v", in)
	}
	if n := len(a.aws.Calls("DescribeInstances")); n != 1 {
		t.Errorf("%d DescribeInstances calls, want 1", n)
	}
	if n := len(a.aws.Calls("SendCommand")); n != 1 {
		t.Errorf("%d SendCommand calls, want 1 for 4 instances", n)
	}
}

// The claim comes from the instances' image-digest tag, read from the DescribeInstances
// answer: no call beyond the one listing.
func TestVerifyEC2TagClaimAgainstSSM(t *testing.T) {
	a := startAWSWorld(t)
	cfg := a.configClaim(t, fmt.Sprintf("  ec2:\n    region: us-east-1\n    auto_scaling_groups: [store-web-prod]\n    port: %d", a.port),
		"  digest:\n    source: ec2-tag")
	rep, stderr, code := a.verify(t, cfg)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s", code, stderr)
	}
	checkLieCaught(t, rep, a)
	for _, in := range rep.Instances {
		if in.ReportedDigest != a.w.Released.Digest {
			t.Errorf("%s reported_digest %q, want the tag's %s", in.ID, in.ReportedDigest, a.w.Released.Digest)
		}
	}
	if n := len(a.aws.Calls("")); n != 1+1+len(a.aws.Calls("ListCommandInvocations")) {
		t.Errorf("%d AWS calls: want DescribeInstances once, SendCommand once and the polls", n)
	}
}

func TestVerifyTargetGroupWithSSM(t *testing.T) {
	a := startAWSWorld(t)
	cfg := a.config(t, "  target_groups: ["+tgARN+"]")
	rep, stderr, code := a.verify(t, cfg)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s", code, stderr)
	}
	checkLieCaught(t, rep, a)
	for _, in := range rep.Instances {
		if in.Labels["target_group"] != "store-web" || in.Labels["target_health"] != "healthy" {
			t.Errorf("%s labels %v", in.ID, in.Labels)
		}
	}
}

func TestVerifyAWSFailures(t *testing.T) {
	a := startAWSWorld(t)
	tests := []struct {
		name   string
		fleet  string
		fault  func()
		env    []string
		code   int
		stderr string
	}{
		{"unknown target group", "  target_groups: [" + strings.Replace(tgARN, "store-web", "gone", 1) + "]", nil, nil, 2,
			"target group arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/gone/0123456789abcdef not found in us-east-1"},
		{"access denied", "  ec2: {auto_scaling_groups: [store-web-prod], port: 80}", func() {
			a.aws.Fail("DescribeInstances", "UnauthorizedOperation", "You are not authorized to perform this operation.", 1)
		}, nil, 3, "ec2:DescribeInstances denied in us-east-1 (grant the IAM action ec2:DescribeInstances)"},
		{"no region", "  ec2: {auto_scaling_groups: [store-web-prod], port: 80}", nil, []string{"AWS_REGION="}, 2, "no AWS region"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != nil {
				tc.fault()
			}
			_, stderr, code := a.verify(t, a.config(t, tc.fleet), tc.env...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// An instance of the group without an address of the configured kind is reported, never
// dropped: unreachable, saying why, with nothing dialed.
func TestVerifyInstanceWithoutAddress(t *testing.T) {
	a := startAWSWorld(t)
	a.aws.EC2.Add(awsfake.Instance{ID: "i-0000000000000005", State: "pending", AZ: "us-east-1b", InstanceType: "c7g.large",
		Tags: map[string]string{"aws:autoscaling:groupName": "store-web-prod"}})
	a.aws.SSM.Manage("i-0000000000000005", awsfake.SSMInstance{Env: map[string]string{"FAKE_CONTAINER": "none"}})
	cfg := a.config(t, fmt.Sprintf("  ec2:\n    auto_scaling_groups: [store-web-prod]\n    port: %d", a.port))
	rep, stderr, code := a.verify(t, cfg)
	if code != 1 {
		t.Fatalf("exit %d; stderr: %s", code, stderr)
	}
	var found bool
	for _, f := range rep.Findings {
		if f.Kind == model.KindUnreachable && f.Instance == "i-0000000000000005" {
			found = strings.Contains(f.Message, "has no private IP address")
		}
	}
	if !found {
		t.Errorf("no unreachable finding saying the instance has no private IP: %v", findingsOf(rep))
	}
	if rep.Summary.Instances != 5 {
		t.Errorf("%d instances in the report, want 5", rep.Summary.Instances)
	}
}
