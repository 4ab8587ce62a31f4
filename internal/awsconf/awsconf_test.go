package awsconf

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/polygraph-dev/polygraph/config"
)

func isolate(t *testing.T) {
	for k, v := range map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_CONFIG_FILE": "/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE": "/dev/null", "AWS_EC2_METADATA_DISABLED": "true", "AWS_ACCESS_KEY_ID": "AKIAFAKE", "AWS_SECRET_ACCESS_KEY": "x"} {
		t.Setenv(k, v)
	}
}

func TestLoadNeedsARegion(t *testing.T) {
	isolate(t)
	_, err := Load(context.Background(), "")
	var ce *config.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no AWS region") {
		t.Fatalf("err = %v, want a configuration error about the region", err)
	}
	cfg, err := Load(context.Background(), "eu-west-1")
	if err != nil || cfg.Region != "eu-west-1" {
		t.Fatalf("region from the config: %v, %v", cfg.Region, err)
	}
	t.Setenv("AWS_REGION", "us-west-2")
	if cfg, err := Load(context.Background(), ""); err != nil || cfg.Region != "us-west-2" {
		t.Fatalf("region from AWS_REGION: %v, %v", cfg.Region, err)
	}
	if cfg, err := LoadDefault(context.Background()); err != nil || cfg.Region != "us-west-2" {
		t.Fatalf("LoadDefault: %v, %v", cfg.Region, err)
	}
}

func TestWrap(t *testing.T) {
	op := func(service, name, code, msg string) error {
		return &smithy.OperationError{ServiceID: service, OperationName: name, Err: &smithy.GenericAPIError{Code: code, Message: msg}}
	}
	for name, tc := range map[string]struct {
		err    error
		want   string
		denied bool
	}{
		"ec2 denied":  {op("EC2", "DescribeInstances", "UnauthorizedOperation", "You are not authorized"), "ec2:DescribeInstances denied in us-east-1 (grant the IAM action ec2:DescribeInstances): UnauthorizedOperation: You are not authorized", true},
		"elb denied":  {op("Elastic Load Balancing v2", "DescribeTargetHealth", "AccessDenied", "nope"), "elasticloadbalancing:DescribeTargetHealth denied in us-east-1", true},
		"ssm denied":  {op("SSM", "SendCommand", "AccessDeniedException", "nope"), "ssm:SendCommand denied in us-east-1", true},
		"other error": {op("EC2", "DescribeInstances", "InternalError", "boom"), "calling ec2:DescribeInstances in us-east-1: InternalError: boom", false},
	} {
		t.Run(name, func(t *testing.T) {
			err := Wrap(tc.err, "us-east-1")
			var e *Error
			if !errors.As(err, &e) || e.Denied != tc.denied || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v (denied %v), want %q", err, e != nil && e.Denied, tc.want)
			}
			if Code(err) == "" {
				t.Error("the AWS code is lost")
			}
		})
	}
	plain := errors.New("dial tcp: refused")
	if Wrap(plain, "x") != plain {
		t.Error("a non-AWS error is changed")
	}
}
