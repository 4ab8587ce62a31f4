//go:build tools

// Package tools pins module versions that the project depends on before its code imports them.
package tools

import (
	_ "github.com/aws/aws-sdk-go-v2/config"
	_ "github.com/aws/aws-sdk-go-v2/service/autoscaling"
	_ "github.com/aws/aws-sdk-go-v2/service/ec2"
	_ "github.com/aws/aws-sdk-go-v2/service/ecr"
	_ "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	_ "github.com/aws/aws-sdk-go-v2/service/sqs"
	_ "github.com/aws/aws-sdk-go-v2/service/ssm"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/hashicorp/go-retryablehttp"
	_ "github.com/mattn/go-isatty"
	_ "github.com/urfave/cli/v2"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/net/html"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/time/rate"
)
