package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"

	"github.com/polygraph-dev/polygraph/internal/awsconf"
)

// TagMutability tells whether a repository lets a pushed tag be overwritten.
type TagMutability interface {
	// TagsMutable reports whether tags of repository in registry can be re-pushed, and ok=false
	// when registry is not one this checker knows (nothing is asked then).
	TagsMutable(ctx context.Context, registry, repository string) (mutable, ok bool, err error)
}

// ECRTagMutability asks Amazon ECR (DescribeRepositories) about repositories of
// ACCOUNT.dkr.ecr.REGION.amazonaws.com registries, with the SDK's standard configuration
// (credential chain, AWS_ENDPOINT_URL_ECR, ...) and the region taken from the registry host.
func ECRTagMutability(cfg aws.Config) TagMutability {
	return &ecrMutability{cfg: cfg, describe: map[string]describeRepositories{}}
}

// describeRepositories is one client's DescribeRepositories. The checker keeps that method
// value, never the client: the checker is an interface value, and a client held in it would
// link every ECR operation (cmd/polygraph's TestUnusedAWSOperationsAreNotLinked).
type describeRepositories func(context.Context, *ecr.DescribeRepositoriesInput, ...func(*ecr.Options)) (*ecr.DescribeRepositoriesOutput, error)

type ecrMutability struct {
	cfg      aws.Config
	describe map[string]describeRepositories // by region
}

// ecrRegistry splits an ECR registry host into account and region.
func ecrRegistry(host string) (account, region string, ok bool) {
	parts := strings.Split(host, ".")
	if len(parts) < 6 || parts[1] != "dkr" || (parts[2] != "ecr" && parts[2] != "ecr-fips") || parts[4] != "amazonaws" {
		return "", "", false
	}
	return parts[0], parts[3], true
}

func (e *ecrMutability) TagsMutable(ctx context.Context, registry, repository string) (bool, bool, error) {
	account, region, ok := ecrRegistry(registry)
	if !ok {
		return false, false, nil
	}
	describe := e.describe[region]
	if describe == nil {
		describe = ecr.NewFromConfig(e.cfg, func(o *ecr.Options) { o.Region = region }).DescribeRepositories
		e.describe[region] = describe
	}
	out, err := describe(ctx, &ecr.DescribeRepositoriesInput{
		RegistryId:      aws.String(account),
		RepositoryNames: []string{repository},
	})
	if err != nil {
		return false, true, fmt.Errorf("describing ECR repository %q: %w", repository, awsconf.Wrap(err, region))
	}
	for _, r := range out.Repositories {
		if aws.ToString(r.RepositoryName) == repository {
			return strings.HasPrefix(string(r.ImageTagMutability), "MUTABLE"), true, nil
		}
	}
	return false, true, fmt.Errorf("describing ECR repository %q: not found", repository)
}
