package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecrpublic"
	"github.com/awslabs/amazon-ecr-credential-helper/ecr-login/api"
	"github.com/awslabs/amazon-ecr-credential-helper/ecr-login/cache"
)

// ecrToken returns the user name and password of an Amazon ECR registry the way the Amazon
// ECR credential helper's client does, through the helper's own token cache
// (AWS_ECR_CACHE_DIR, default ~/.ecr; AWS_ECR_DISABLE_CACHE turns it off), so docker and
// polygraph share tokens: a cached token while it is valid, else a new one from
// GetAuthorizationToken (ECR, or ECR Public in us-east-1) saved to the cache; when the
// service fails and the cache holds an expired token, that token is tried.
//
// The helper's client is not used because it holds the SDK clients as interface values,
// which links all 83 operations of ECR and ECR Public (1.6 MB of code) into every polygraph
// process; here each service's one operation is called on the client itself.
func ecrToken(ctx context.Context, cfg aws.Config, reg *api.Registry) (user, password string, err error) {
	tokens := cache.BuildCredentialsCache(cfg, "")
	public := reg.Service == api.ServiceECRPublic
	var cached *cache.AuthEntry
	if public {
		cached = tokens.GetPublic()
	} else {
		cached = tokens.Get(reg.ID)
	}
	if cached != nil && cached.IsValid(time.Now()) {
		return decodeECRToken(cached.AuthorizationToken)
	}
	key, entry, err := fetchECRToken(ctx, cfg, reg)
	if err != nil {
		if cached != nil {
			return decodeECRToken(cached.AuthorizationToken)
		}
		return "", "", err
	}
	user, password, err = decodeECRToken(entry.AuthorizationToken)
	if err == nil {
		tokens.Set(key, entry)
	}
	return user, password, err
}

// fetchECRToken asks the service for a token for reg and returns it with its cache key.
func fetchECRToken(ctx context.Context, cfg aws.Config, reg *api.Registry) (string, *cache.AuthEntry, error) {
	if reg.Service == api.ServiceECRPublic {
		pc := cfg.Copy()
		pc.Region = "us-east-1" // the ECR Public API is served from us-east-1 only
		out, err := ecrpublic.NewFromConfig(pc).GetAuthorizationToken(ctx, &ecrpublic.GetAuthorizationTokenInput{})
		if err != nil {
			return "", nil, err
		}
		if out.AuthorizationData == nil || out.AuthorizationData.AuthorizationToken == nil {
			return "", nil, errors.New("ECR Public answered without authorization data")
		}
		return reg.Name, &cache.AuthEntry{
			AuthorizationToken: aws.ToString(out.AuthorizationData.AuthorizationToken),
			RequestedAt:        time.Now(),
			ExpiresAt:          aws.ToTime(out.AuthorizationData.ExpiresAt),
			ProxyEndpoint:      "https://" + reg.Name,
			Service:            cache.ServiceECRPublic,
		}, nil
	}
	out, err := ecr.NewFromConfig(cfg).GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{RegistryIds: []string{reg.ID}})
	if err != nil {
		return "", nil, err
	}
	for _, d := range out.AuthorizationData {
		if d.ProxyEndpoint == nil || d.AuthorizationToken == nil {
			continue
		}
		at, err := api.ExtractRegistry(*d.ProxyEndpoint)
		if err != nil {
			return "", nil, fmt.Errorf("ECR answered with proxy endpoint %q, not an ECR registry", *d.ProxyEndpoint)
		}
		return at.ID, &cache.AuthEntry{
			AuthorizationToken: *d.AuthorizationToken,
			RequestedAt:        time.Now(),
			ExpiresAt:          aws.ToTime(d.ExpiresAt),
			ProxyEndpoint:      *d.ProxyEndpoint,
			Service:            cache.ServiceECR,
		}, nil
	}
	return "", nil, fmt.Errorf("ECR answered without an authorization token for registry %s", reg.ID)
}

// decodeECRToken splits an authorization token, base64 of "user:password".
func decodeECRToken(token string) (user, password string, err error) {
	b, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		return "", "", fmt.Errorf("ECR authorization token is not base64: %w", err)
	}
	user, password, ok := strings.Cut(string(b), ":")
	if !ok {
		return "", "", errors.New("ECR authorization token is not user:password")
	}
	return user, password, nil
}
