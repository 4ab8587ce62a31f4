package run

import (
	"context"
	"crypto/tls"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/docker/go-connections/tlsconfig"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/fleet"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/running"
)

// usesAWS reports whether the config calls AWS (an EC2 or target group fleet, or SSM).
func usesAWS(cfg *config.Config) bool {
	return cfg.Fleet.EC2 != nil || len(cfg.Fleet.TargetGroups) > 0 || cfg.Probe.Runtime.Source == "ssm"
}

// LoadAWS loads the one aws.Config the run's AWS clients are built from, when the config
// calls AWS (ok false otherwise). The region is fleet.ec2.region, else the environment's.
func LoadAWS(ctx context.Context, cfg *config.Config) (awsCfg aws.Config, ok bool, err error) {
	if !usesAWS(cfg) {
		return aws.Config{}, false, nil
	}
	region := ""
	if cfg.Fleet.EC2 != nil {
		region = cfg.Fleet.EC2.Region
	}
	awsCfg, err = awsconf.Load(ctx, region)
	if err != nil {
		if ce, isCE := err.(*config.Error); isCE && ce.File == "" {
			ce.File = cfg.File
		}
		return aws.Config{}, false, err
	}
	return awsCfg, true, nil
}

// awsConfig returns the run's shared AWS configuration, or loads one.
func awsConfig(ctx context.Context, cfg *config.Config, shared *aws.Config) (aws.Config, error) {
	if shared != nil {
		return *shared, nil
	}
	awsCfg, _, err := LoadAWS(ctx, cfg)
	return awsCfg, err
}

// AWSSources builds the EC2 and target group fleet sources the config names (none without
// them), one client per service from one aws.Config.
func AWSSources(ctx context.Context, cfg *config.Config) ([]fleet.Source, error) {
	return awsFleet(ctx, cfg, nil)
}

// awsFleet is AWSSources with the run's AWS configuration (nil loads one).
func awsFleet(ctx context.Context, cfg *config.Config, shared *aws.Config) ([]fleet.Source, error) {
	if cfg.Fleet.EC2 == nil && len(cfg.Fleet.TargetGroups) == 0 {
		return nil, nil
	}
	awsCfg, err := awsConfig(ctx, cfg, shared)
	if err != nil {
		return nil, err
	}
	var out []fleet.Source
	address, tag := "private_ip", ""
	if cfg.Probe.Digest.Source == "ec2-tag" {
		tag = cfg.Probe.Digest.Tag
	}
	ec2c := ec2.NewFromConfig(awsCfg)
	if e := cfg.Fleet.EC2; e != nil {
		address = e.Address
		out = append(out, fleet.NewEC2(ec2c, fleet.EC2Options{
			Region: awsCfg.Region, AutoScalingGroups: e.AutoScalingGroups, Filters: e.Filters,
			Address: e.Address, Port: e.Port, DigestTag: tag,
		}))
	}
	if len(cfg.Fleet.TargetGroups) > 0 {
		out = append(out, fleet.NewTargetGroups(elb.NewFromConfig(awsCfg), ec2c, fleet.TargetGroupsOptions{
			Region: awsCfg.Region, ARNs: cfg.Fleet.TargetGroups, Address: address, DigestTag: tag,
		}))
	}
	return out, nil
}

// runtimeSource builds the trusted running-digest source probe.runtime names (nil when none).
func runtimeSource(ctx context.Context, cfg *config.Config, shared *aws.Config) (running.Source, error) {
	r := cfg.Probe.Runtime
	switch r.Source {
	case "":
		return nil, nil
	case "ssm":
		awsCfg, err := awsConfig(ctx, cfg, shared)
		if err != nil {
			return nil, err
		}
		src, err := running.NewSSM(ssm.NewFromConfig(awsCfg), r.Container, running.WithEngine(r.Engine), running.WithRegion(awsCfg.Region))
		if err != nil {
			return nil, &config.Error{File: cfg.File, Msg: "probe.runtime: " + err.Error()}
		}
		return src, nil
	case "docker":
		opts := []running.DockerOption{running.WithDockerHost(r.DockerHost), running.WithDockerConcurrency(cfg.Probe.Concurrency)}
		if r.TLS != (config.RuntimeTLS{}) {
			tc, err := tlsconfig.Client(tlsconfig.Options{CAFile: r.TLS.CAFile, CertFile: r.TLS.CertFile, KeyFile: r.TLS.KeyFile,
				ExclusiveRootPools: r.TLS.CAFile != "", MinVersion: tls.VersionTLS12})
			if err != nil {
				return nil, &config.Error{File: cfg.File, Msg: fmt.Sprintf("probe.runtime.tls: %v", err)}
			}
			opts = append(opts, running.WithDockerTLS(tc))
		}
		src, err := running.NewDocker(r.Container, opts...)
		if err != nil {
			return nil, &config.Error{File: cfg.File, Msg: "probe.runtime: " + err.Error()}
		}
		return src, nil
	}
	return nil, &config.Error{File: cfg.File, Msg: fmt.Sprintf("probe.runtime.source %q is not ssm or docker", r.Source)}
}
