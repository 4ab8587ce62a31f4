package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/internal/awsfake"
)

// fakeAWS starts the fake and points the SDK at it through the environment.
func fakeAWS(t testing.TB) (*awsfake.Server, *ec2.Client, *elb.Client) {
	t.Helper()
	f := awsfake.New()
	t.Cleanup(f.Close)
	awsfake.Setenv(t, f.Env("us-east-1"))
	cfg, err := awsconf.Load(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return f, ec2.NewFromConfig(cfg), elb.NewFromConfig(cfg)
}

var launched = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func inst(id, ip, asg, state string) awsfake.Instance {
	tags := map[string]string{"Service": "store-web"}
	if asg != "" {
		tags["aws:autoscaling:groupName"] = asg
	}
	return awsfake.Instance{ID: id, State: state, PrivateIP: ip, PrivateDNS: "ip-" + strings.ReplaceAll(ip, ".", "-") + ".ec2.internal",
		AZ: "us-east-1a", InstanceType: "t3.small", AMI: "ami-0123", LaunchTime: launched, Tags: tags}
}

func TestEC2ListsEveryPageWithServerSideFilters(t *testing.T) {
	f, c, _ := fakeAWS(t)
	f.EC2.SetPageSize(2)
	f.EC2.Add(
		inst("i-0000000000000001", "127.0.1.1", "store-web-prod", "running"),
		inst("i-0000000000000002", "127.0.1.2", "store-web-prod", "pending"),
		inst("i-0000000000000003", "127.0.1.3", "store-web-prod", "terminated"),
		inst("i-0000000000000004", "127.0.1.4", "other", "running"),
		inst("i-0000000000000005", "127.0.1.5", "store-web-prod", "running"),
	)
	spot := inst("i-0000000000000006", "", "store-web-prod", "running")
	spot.Lifecycle = "spot"
	spot.Tags["image-digest"] = "registry.example.com/web@sha256:" + strings.Repeat("AB", 32)
	f.EC2.Add(spot)
	src := NewEC2(c, EC2Options{Region: "us-east-1", AutoScalingGroups: []string{"store-web-prod"},
		Filters: map[string][]string{"tag:Service": {"store-web"}}, Port: 8080, DigestTag: "image-digest"})
	got, err := src.Targets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tg := range got {
		ids = append(ids, tg.ID)
	}
	want := []string{"i-0000000000000001", "i-0000000000000002", "i-0000000000000005", "i-0000000000000006"}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	calls := f.Calls("DescribeInstances")
	if len(calls) != 2 {
		t.Fatalf("%d DescribeInstances calls, want 2 pages", len(calls))
	}
	p := calls[0].Params
	if p.Get("Filter.1.Name") != "instance-state-name" || p.Get("Filter.1.Value.1") != "pending" || p.Get("Filter.1.Value.2") != "running" ||
		p.Get("Filter.2.Name") != "tag:aws:autoscaling:groupName" || p.Get("Filter.2.Value.1") != "store-web-prod" ||
		p.Get("Filter.3.Name") != "tag:Service" || p.Get("Filter.3.Value.1") != "store-web" {
		t.Errorf("filters not sent server-side: %v", p)
	}
	if calls[1].Params.Get("NextToken") == "" {
		t.Errorf("second page asked without NextToken: %v", calls[1].Params)
	}
	first := got[0]
	if first.Address != "127.0.1.1:8080" || !first.LaunchedAt.Equal(launched) || first.Source != "ec2" || first.Unreachable != "" {
		t.Errorf("first target: %+v", first)
	}
	wantLabels := map[string]string{"az": "us-east-1a", "asg": "store-web-prod", "instance_type": "t3.small", "lifecycle": "on-demand", "ami": "ami-0123"}
	for k, v := range wantLabels {
		if first.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, first.Labels[k], v)
		}
	}
	last := got[3]
	if last.Labels["lifecycle"] != "spot" || last.Address != "" || !strings.Contains(last.Unreachable, "has no private IP address") {
		t.Errorf("spot instance without address: %+v", last)
	}
	if last.ReportedDigest != "sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("ec2-tag claim = %q, want the canonical digest", last.ReportedDigest)
	}
}

func TestEC2AddressKinds(t *testing.T) {
	f, c, _ := fakeAWS(t)
	in := inst("i-0000000000000001", "127.0.1.1", "", "running")
	in.PublicIP = "127.0.2.1"
	f.EC2.Add(in)
	for kind, want := range map[string]string{"private_ip": "127.0.1.1:80", "public_ip": "127.0.2.1:80", "private_dns": "ip-127-0-1-1.ec2.internal:80"} {
		got, err := NewEC2(c, EC2Options{Address: kind, Port: 80}).Targets(context.Background())
		if err != nil || len(got) != 1 || got[0].Address != want {
			t.Errorf("%s: %+v, %v; want %s", kind, got, err, want)
		}
	}
}

func TestEC2ErrorsNameTheIAMAction(t *testing.T) {
	f, c, _ := fakeAWS(t)
	f.Fail("DescribeInstances", "UnauthorizedOperation", "You are not authorized to perform this operation.", 1)
	_, err := NewEC2(c, EC2Options{Region: "us-east-1", Port: 80}).Targets(context.Background())
	var ae *awsconf.Error
	if !errors.As(err, &ae) || !ae.Denied || ae.Action != "ec2:DescribeInstances" {
		t.Fatalf("err = %v, want a denial of ec2:DescribeInstances", err)
	}
	if want := "ec2:DescribeInstances denied in us-east-1"; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to say %q", err, want)
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		t.Errorf("a denial is not a configuration error: %v", err)
	}
}

func TestEC2ThrottlingIsRetriedBySDK(t *testing.T) {
	f, c, _ := fakeAWS(t)
	f.EC2.Add(inst("i-0000000000000001", "127.0.1.1", "", "running"))
	f.Fail("DescribeInstances", "RequestLimitExceeded", "Request limit exceeded.", 1)
	got, err := NewEC2(c, EC2Options{Port: 80}).Targets(context.Background())
	if err != nil || len(got) != 1 {
		t.Fatalf("got %v, %v", got, err)
	}
	if n := len(f.Calls("DescribeInstances")); n != 2 {
		t.Errorf("%d calls, want the throttled one and its retry", n)
	}
}

const arnPrefix = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/"

func TestTargetGroups(t *testing.T) {
	f, ec2c, elbc := fakeAWS(t)
	f.EC2.Add(inst("i-0000000000000001", "127.0.1.1", "web", "running"), inst("i-0000000000000002", "127.0.1.2", "web", "running"))
	f.ELBv2.Add(
		awsfake.TargetGroup{ARN: arnPrefix + "web-blue/1111", Type: "instance", Port: 80, Targets: []awsfake.RegisteredTarget{
			{ID: "i-0000000000000001", Port: 8080, Health: "healthy"},
			{ID: "i-0000000000000002", Port: 8080, Health: "unhealthy"},
			{ID: "i-0000000000000009", Port: 8080, Health: "draining"},
		}},
		awsfake.TargetGroup{ARN: arnPrefix + "web-green/2222", Type: "instance", Port: 80, Targets: []awsfake.RegisteredTarget{
			{ID: "i-0000000000000001", Port: 8080, Health: "healthy"},
			{ID: "i-0000000000000001", Port: 9090, Health: "initial"},
		}},
		awsfake.TargetGroup{ARN: arnPrefix + "web-ip/3333", Type: "ip", Port: 80, Targets: []awsfake.RegisteredTarget{
			{ID: "127.0.1.7", Port: 8081, Health: "unused"},
		}},
	)
	src := NewTargetGroups(elbc, ec2c, TargetGroupsOptions{Region: "us-east-1", ARNs: []string{arnPrefix + "web-blue/1111", arnPrefix + "web-green/2222", arnPrefix + "web-ip/3333"}})
	got, err := src.Targets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, tg := range got {
		lines = append(lines, fmt.Sprintf("%s %s %s %s %t", tg.ID, tg.Address, tg.Labels["target_group"], tg.Labels["target_health"], tg.Unreachable != ""))
	}
	want := []string{
		"i-0000000000000001 127.0.1.1:8080 web-blue,web-green healthy,healthy false",
		"i-0000000000000002 127.0.1.2:8080 web-blue unhealthy false",
		"i-0000000000000009  web-blue draining true",
		"i-0000000000000001:9090 127.0.1.1:9090 web-green initial false",
		"127.0.1.7:8081 127.0.1.7:8081 web-ip unused false",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("targets:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got[0].Labels["asg"] != "web" || got[0].LaunchedAt.IsZero() {
		t.Errorf("instance targets carry the EC2 labels: %+v", got[0])
	}
	if n := len(f.Calls("DescribeTargetHealth")); n != 3 {
		t.Errorf("%d DescribeTargetHealth calls, want one per group", n)
	}
	if n := len(f.Calls("DescribeTargetGroups")); n != 1 {
		t.Errorf("%d DescribeTargetGroups calls, want 1", n)
	}
	// The unknown instance fails the first lookup; it is retried without it.
	di := f.Calls("DescribeInstances")
	if len(di) != 2 || di[1].Params.Get("InstanceId.3") != "" {
		t.Errorf("DescribeInstances calls: %+v", di)
	}
}

func TestTargetGroupErrors(t *testing.T) {
	f, ec2c, elbc := fakeAWS(t)
	f.ELBv2.Add(awsfake.TargetGroup{ARN: arnPrefix + "fn/1", Type: "lambda"}, awsfake.TargetGroup{ARN: arnPrefix + "ok/2", Type: "ip"})
	for name, tc := range map[string]struct {
		arns []string
		want string
	}{
		"unknown ARN": {[]string{arnPrefix + "ok/2", arnPrefix + "gone/9"}, "target group " + arnPrefix + "gone/9 not found in us-east-1"},
		"lambda":      {[]string{arnPrefix + "fn/1"}, "has target type lambda: only instance and ip targets can be probed"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewTargetGroups(elbc, ec2c, TargetGroupsOptions{Region: "us-east-1", ARNs: tc.arns}).Targets(context.Background())
			var ce *config.Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a config error saying %q", err, tc.want)
			}
		})
	}
}

func TestDiscoverKeepsUnreachableTargetsApart(t *testing.T) {
	a := Static{{ID: "i-1", Unreachable: "no address"}, {ID: "i-2", Unreachable: "no address"}}
	got, err := Discover(context.Background(), a)
	if err != nil || len(got) != 2 {
		t.Fatalf("got %+v, %v: targets without an address are not one target", got, err)
	}
}

func TestInstancesByID(t *testing.T) {
	f, c, _ := fakeAWS(t)
	f.EC2.Add(inst("i-0000000000000001", "127.0.1.1", "web", "running"), inst("i-0000000000000002", "127.0.1.2", "web", "pending"))
	got, err := Instances(context.Background(), c, []string{"i-0000000000000002", "i-00000000000000aa", "i-0000000000000001"}, EC2Options{Region: "us-east-1", Port: 8080})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Address != "127.0.1.2:8080" || got[2].Address != "127.0.1.1:8080" || got[0].Labels["asg"] != "web" {
		t.Fatalf("%+v", got)
	}
	if got[1].ID != "i-00000000000000aa" || !strings.Contains(got[1].Unreachable, "unknown to DescribeInstances in us-east-1") {
		t.Errorf("unknown instance: %+v", got[1])
	}
	calls := f.Calls("DescribeInstances")
	if len(calls) != 2 || calls[0].Params.Get("InstanceId.2") != "i-00000000000000aa" || calls[1].Params.Get("InstanceId.2") != "i-0000000000000001" {
		t.Errorf("want one call with all three IDs, then one without the unknown: %+v", calls)
	}
}

func TestTargetGroupThrottlingIsRetriedBySDK(t *testing.T) {
	f, ec2c, elbc := fakeAWS(t)
	f.ELBv2.Add(awsfake.TargetGroup{ARN: arnPrefix + "ip/1", Type: "ip", Targets: []awsfake.RegisteredTarget{{ID: "127.0.1.9", Port: 80, Health: "healthy"}}})
	f.Fail("DescribeTargetHealth", "Throttling", "Rate exceeded", 1)
	got, err := NewTargetGroups(elbc, ec2c, TargetGroupsOptions{ARNs: []string{arnPrefix + "ip/1"}}).Targets(context.Background())
	if err != nil || len(got) != 1 || got[0].ID != "127.0.1.9:80" {
		t.Fatalf("%+v, %v", got, err)
	}
	if n := len(f.Calls("DescribeTargetHealth")); n != 2 {
		t.Errorf("%d calls, want the throttled one and its retry", n)
	}
}

// Throttling without end is retried within the deadline, never beyond it.
func TestThrottlingStopsAtTheDeadline(t *testing.T) {
	f, c, _ := fakeAWS(t)
	f.Fail("DescribeInstances", "RequestLimitExceeded", "Request limit exceeded.", 1000)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := NewEC2(c, EC2Options{Region: "us-east-1", Port: 80}).Targets(ctx)
	if err == nil || !strings.Contains(err.Error(), "ec2:DescribeInstances") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("returned after %v, past a 300ms deadline", d)
	}
}
