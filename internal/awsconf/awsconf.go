// Package awsconf loads the one AWS configuration every AWS client of polygraph is built from,
// and turns AWS API errors into errors that name the operation, region and IAM action.
package awsconf

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go"

	"github.com/polygraph-dev/polygraph/config"
)

// Load returns the SDK's standard configuration (credential chain, profiles, AWS_REGION,
// AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>, the standard retryer, which sleeps no
// longer than the context allows). A non-empty region overrides the environment's. A missing
// region is a *config.Error: without one no AWS endpoint can be chosen.
func Load(ctx context.Context, region string) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, &config.Error{Msg: fmt.Sprintf("loading the AWS configuration: %v", err)}
	}
	if cfg.Region == "" {
		return aws.Config{}, &config.Error{Msg: "no AWS region: set fleet.ec2.region, AWS_REGION or a profile's region"}
	}
	return cfg, nil
}

// LoadDefault returns the SDK's standard configuration like Load, but with whatever region
// the environment gives, possibly none: for clients that set their region per call (Amazon
// ECR, whose region is in the registry host).
func LoadDefault(ctx context.Context) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, &config.Error{Msg: fmt.Sprintf("loading the AWS configuration: %v", err)}
	}
	return cfg, nil
}

// Error is a failed AWS call. It names the operation, the region and the IAM action the call
// needs; Denied is true when AWS refused it for lack of permission.
type Error struct {
	Action string // IAM action, "ec2:DescribeInstances"
	Region string
	Code   string // AWS error code, "UnauthorizedOperation"; "" when the call got no AWS answer
	Denied bool
	// Message is AWS's own words ("" when the call got no AWS answer).
	Message string
	Err     error
}

func (e *Error) Error() string {
	why := e.Err.Error()
	if e.Code != "" {
		why = e.Code
		if e.Message != "" {
			why += ": " + e.Message
		}
	}
	if e.Denied {
		return fmt.Sprintf("%s denied in %s (grant the IAM action %s): %s", e.Action, e.Region, e.Action, why)
	}
	return fmt.Sprintf("calling %s in %s: %s", e.Action, e.Region, why)
}

func (e *Error) Unwrap() error { return e.Err }

// deniedCodes are the error codes AWS services answer when IAM refuses a call.
var deniedCodes = map[string]bool{
	"AccessDenied": true, "AccessDeniedException": true, "UnauthorizedOperation": true,
	"UnauthorizedAccess": true, "AuthorizationError": true, "UnrecognizedClientException": true,
}

// iamPrefix maps SDK service IDs to IAM action prefixes.
var iamPrefix = map[string]string{
	"EC2": "ec2", "Elastic Load Balancing v2": "elasticloadbalancing", "SSM": "ssm",
	"ECR": "ecr", "Auto Scaling": "autoscaling", "SQS": "sqs",
}

// Wrap turns an SDK error into an *Error naming the IAM action of the failed operation and
// the region. Errors that are not AWS operation errors are returned unchanged.
func Wrap(err error, region string) error {
	var oe *smithy.OperationError
	if err == nil || !errors.As(err, &oe) {
		return err
	}
	prefix, ok := iamPrefix[oe.ServiceID]
	if !ok {
		prefix = strings.ToLower(strings.ReplaceAll(oe.ServiceID, " ", ""))
	}
	e := &Error{Action: prefix + ":" + oe.OperationName, Region: region, Err: err}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		e.Code = ae.ErrorCode()
		e.Denied = deniedCodes[e.Code]
		e.Message = ae.ErrorMessage()
	}
	return e
}

// Code returns the AWS error code of err ("" when err carries none).
func Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
