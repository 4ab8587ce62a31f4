package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/polygraph-dev/polygraph/internal/awsfake"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

// LaunchWorld is an Auto Scaling group in the making: a recorded release, a CDN holding its
// assets, instances on one port (as fleet.ec2 addresses them), and fake EC2, Auto Scaling and
// SQS endpoints that know those instances.
type LaunchWorld struct {
	AWS      *awsfake.Server
	Fleet    *Fleet
	CDN      *CDN
	Registry *regtest.Server
	Image    string
	Record   *model.ReleaseRecord
	// Good is the release's build; Bad is a rebuild whose assets were never uploaded.
	Good, Bad *Build
	Port      int
	Group     string
	Hook      string
}

// StartLaunchWorld starts the world. Each spec's ID is an EC2 instance ID; a spec without a
// Build serves Good. Every instance is known to the EC2 fake as pending in Group.
func StartLaunchWorld(ctx context.Context, specs []Spec) (w *LaunchWorld, err error) {
	w = &LaunchWorld{Good: CRABuild("store-web v3 build 1", 12, 8), Bad: CRABuild("store-web v3 build 2", 12, 8),
		Group: "store-web-prod", Hook: "polygraph-verify"}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	w.Registry = regtest.NewServer()
	w.Image = w.Registry.Ref("store-web:v3.0.0")
	if _, w.Record, err = Publish(ctx, w.Image, w.Good); err != nil {
		return nil, err
	}
	if w.CDN, err = StartCDN("/store/", w.Good); err != nil {
		return nil, err
	}
	for i := range specs {
		if specs[i].Build == nil {
			specs[i].Build = w.Good
		}
		if specs[i].Version == "" {
			specs[i].Version = "v3.0.0"
		}
	}
	if w.Fleet, err = StartFleetWith(specs, FleetOptions{SamePort: true}); err != nil {
		return nil, err
	}
	w.AWS = awsfake.New()
	for _, in := range w.Fleet.Instances {
		host, port, _ := net.SplitHostPort(in.Address)
		fmt.Sscan(port, &w.Port)
		w.AWS.EC2.Add(awsfake.Instance{ID: in.ID, State: "pending", PrivateIP: host, AZ: "us-east-1a",
			InstanceType: "t3.small", AMI: "ami-0123456789abcdef0", LaunchTime: time.Now().UTC(),
			Tags: map[string]string{"aws:autoscaling:groupName": w.Group}})
	}
	return w, nil
}

// Close stops everything.
func (w *LaunchWorld) Close() {
	for _, c := range []interface{ Close() }{w.AWS, w.Fleet, w.CDN, w.Registry} {
		if c != nil && !isNil(c) {
			c.Close()
		}
	}
}

func isNil(c any) bool {
	switch v := c.(type) {
	case *awsfake.Server:
		return v == nil
	case *Fleet:
		return v == nil
	case *CDN:
		return v == nil
	case *regtest.Server:
		return v == nil
	}
	return false
}

// Env is the environment pointing the AWS SDK at the fakes (static credentials, no instance
// metadata).
func (w *LaunchWorld) Env() []string { return w.AWS.HookEnv("us-east-1") }

// Launch puts an instance in Pending:Wait: the Auto Scaling fake holds an active action with
// token and heartbeat timeout. It returns the notification body Auto Scaling sends.
func (w *LaunchWorld) Launch(id, token string, timeout time.Duration) string {
	w.AWS.AutoScaling().AddAction(awsfake.LifecycleAction{Group: w.Group, Hook: w.Hook, Instance: id, Token: token, Timeout: timeout})
	return Notification(w.Group, w.Hook, id, token, "autoscaling:EC2_INSTANCE_LAUNCHING")
}

// Notification is the body Auto Scaling sends to SQS for a lifecycle action.
func Notification(group, hook, id, token, transition string) string {
	b, _ := json.Marshal(map[string]string{
		"Origin": "EC2", "Destination": "AutoScalingGroup", "LifecycleHookName": hook, "AccountId": "123456789012",
		"RequestId": "d5f1bf39-0000-4000-8000-000000000000", "LifecycleTransition": transition, "AutoScalingGroupName": group,
		"Service": "AWS Auto Scaling", "Time": "2026-11-30T12:00:00.000Z", "EC2InstanceId": id, "LifecycleActionToken": token,
	})
	return string(b)
}

// EventBridge wraps a notification body into the EventBridge event Auto Scaling emits.
func EventBridge(notification string) string {
	var detail map[string]any
	json.Unmarshal([]byte(notification), &detail)
	kind := "EC2 Instance-launch Lifecycle Action"
	if strings.Contains(notification, "TERMINATING") {
		kind = "EC2 Instance-terminate Lifecycle Action"
	}
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": "12345678-1234-1234-1234-123456789012", "detail-type": kind, "source": "aws.autoscaling",
		"account": "123456789012", "time": "2026-11-30T12:00:00Z", "region": "us-east-1",
		"resources": []string{"arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:x:autoScalingGroupName/store-web-prod"},
		"detail":    detail,
	})
	return string(b)
}

// ConfigYAML is a polygraph.yaml for the world; hook is the body of its hook section.
func (w *LaunchWorld) ConfigYAML(record, hook string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "release:\n  image: %q\n  record: %s\n", w.Image, record)
	fmt.Fprintf(&b, "fleet:\n  ec2:\n    region: us-east-1\n    auto_scaling_groups: [%s]\n    port: %d\n", w.Group, w.Port)
	fmt.Fprintf(&b, "probe:\n  host: store.example.com\n  manifest:\n    path: %s\n  version:\n    header: X-App-Version\n  timeout: 1s\n  retries: 0\n", w.Fleet.ManifestPath)
	fmt.Fprintf(&b, "cdn:\n  base_urls:\n    - %s\n", w.CDN.URL)
	if hook != "" {
		b.WriteString("hook:\n")
		for _, line := range strings.Split(strings.TrimSpace(hook), "\n") {
			b.WriteString("  " + strings.TrimSpace(line) + "\n")
		}
	}
	return b.String()
}

// WriteConfig writes the release record and the config into dir and returns the config's
// path.
func (w *LaunchWorld) WriteConfig(dir, hook string) (string, error) {
	data, err := jsonIndent(w.Record)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "release.json"), data, 0o644); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "polygraph.yaml")
	return path, os.WriteFile(path, []byte(w.ConfigYAML("release.json", hook)), 0o644)
}
