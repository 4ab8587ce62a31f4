package policy

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Resolver resolves a tag to the digest it points at now.
type Resolver interface {
	Digest(ctx context.Context, tag name.Tag) (string, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, tag name.Tag) (string, error)

// Digest calls f.
func (f ResolverFunc) Digest(ctx context.Context, tag name.Tag) (string, error) { return f(ctx, tag) }

// RemoteResolver returns a Resolver that asks the registry (HEAD, then GET for registries that
// do not answer HEAD) with the default keychain (docker config, credential helpers). Extra
// remote options are appended. The CLI resolves through polygraph's registry client instead
// (ECR credentials, one token per registry, a hard deadline); this one keeps the package usable
// on its own.
func RemoteResolver(opts ...remote.Option) Resolver {
	return ResolverFunc(func(ctx context.Context, tag name.Tag) (string, error) {
		o := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
		desc, err := remote.Head(tag, o...)
		if err == nil {
			return desc.Digest.String(), nil
		}
		d, gerr := remote.Get(tag, o...)
		if gerr != nil {
			return "", gerr
		}
		return d.Digest.String(), nil
	})
}

// ResolveError is returned when --resolve cannot reach the registry or resolve a tag: the check
// could not be done, which is not a finding.
type ResolveError struct {
	// Image is the tag that could not be resolved.
	Image string
	// File and Line name the first place it is referenced.
	File string
	Line int
	// Err is the registry error.
	Err error
}

func (e *ResolveError) Error() string {
	return fmt.Sprintf("%s:%d: resolving %q: %v", e.File, e.Line, e.Image, e.Err)
}

// Unwrap returns the registry error.
func (e *ResolveError) Unwrap() error { return e.Err }
