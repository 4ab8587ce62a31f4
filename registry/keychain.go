package registry

import (
	"context"
	"fmt"

	"github.com/awslabs/amazon-ecr-credential-helper/ecr-login/api"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/polygraph-dev/polygraph/internal/awsconf"
)

// Keychain returns the default credential sources: the Docker config (docker login and its
// credential helpers, authn.DefaultKeychain), then Amazon ECR (ECRKeychain) for ECR hosts.
func Keychain() authn.Keychain {
	return authn.NewMultiKeychain(authn.DefaultKeychain, ECRKeychain())
}

// ECRKeychain returns a keychain that gets Amazon ECR (private and public) tokens through the
// AWS SDK's standard configuration (credential chain, profiles, AWS_REGION,
// AWS_ENDPOINT_URL_ECR, AWS_ENDPOINT_URL_ECR_PUBLIC), sharing the Amazon ECR credential
// helper's token cache (ecrToken). It answers anonymous for any other host. When the AWS side
// fails (no credentials, IAM denies ecr:GetAuthorizationToken) for a private ECR registry, it
// returns an *AuthError at once rather than letting the pull fail later with an anonymous 401;
// for ECR Public it falls back to anonymous pulls.
func ECRKeychain() authn.Keychain { return ecrKeychain{} }

type ecrKeychain struct{}

// Resolve implements authn.Keychain.
func (k ecrKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	return k.ResolveContext(context.Background(), r)
}

// ResolveContext implements authn.ContextKeychain.
func (ecrKeychain) ResolveContext(ctx context.Context, r authn.Resource) (authn.Authenticator, error) {
	host := r.RegistryStr()
	reg, err := api.ExtractRegistry(host)
	if err != nil {
		return authn.Anonymous, nil // not an ECR host
	}
	cfg, err := awsconf.LoadDefault(ctx)
	if reg.Region != "" {
		cfg, err = awsconf.Load(ctx, reg.Region)
	}
	if err != nil {
		return nil, &AuthError{Registry: host, Err: fmt.Errorf("loading the AWS configuration for Amazon ECR: %w", err)}
	}
	user, password, err := ecrToken(ctx, cfg, reg)
	if err != nil && reg.Service == api.ServiceECRPublic {
		return authn.Anonymous, nil // ECR Public serves anonymous pulls, at a lower rate
	}
	if err != nil {
		return nil, &AuthError{Registry: host, Err: fmt.Errorf("getting an Amazon ECR token (check the AWS credentials and the ecr:GetAuthorizationToken permission): %w", err)}
	}
	return authn.FromConfig(authn.AuthConfig{Username: user, Password: password}), nil
}
