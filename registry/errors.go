package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// UnavailableError reports a registry that could not answer: unreachable, timed out, failing
// (5xx) or rate limiting (429). Nothing was learned about the release; the CLI maps it to exit 3.
type UnavailableError struct {
	// Registry is the registry host ("registry.example.com", "127.0.0.1:5000").
	Registry string
	// RateLimited is true when the registry answered 429 or TOOMANYREQUESTS.
	RateLimited bool
	// Timeout is true when the run's deadline expired before the registry answered.
	Timeout bool
	// Status is the last HTTP status, 0 when there was no answer.
	Status int
	Err    error
}

// Error implements error.
func (e *UnavailableError) Error() string {
	switch {
	case e.RateLimited:
		return fmt.Sprintf("registry %s is rate limiting requests (HTTP %d); try again later: %v", e.Registry, e.Status, e.Err)
	case e.Timeout:
		return fmt.Sprintf("registry %s did not answer within the deadline: %v", e.Registry, e.Err)
	case e.Status != 0:
		return fmt.Sprintf("registry %s is failing (HTTP %d): %v", e.Registry, e.Status, e.Err)
	}
	return fmt.Sprintf("registry %s is unreachable: %v", e.Registry, e.Err)
}

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// AuthError reports missing or refused credentials: the registry answered 401 or 403, or the
// credential source itself (for Amazon ECR: the AWS credential chain and IAM) failed.
type AuthError struct {
	Registry string
	Err      error
}

// Error implements error.
func (e *AuthError) Error() string {
	return fmt.Sprintf("not authorized to pull from registry %s: %v", e.Registry, e.Err)
}

// Unwrap returns the underlying error.
func (e *AuthError) Unwrap() error { return e.Err }

// NotFoundError reports an image, a platform or a file that does not exist. Path is empty when
// the image (or its platform) is missing, and set when the image exists but the file does not.
type NotFoundError struct {
	// Ref is the image reference.
	Ref string
	// Platform is the platform asked for, when relevant.
	Platform string
	// Path is the file looked for inside the image; empty when the image itself is missing.
	Path string
	// Reason says why, for instance "deleted by a whiteout in layer 3 (sha256:...)".
	Reason string
	Err    error
}

// Error implements error.
func (e *NotFoundError) Error() string {
	var s string
	switch {
	case e.Path != "":
		s = fmt.Sprintf("file %q not found in image %s", e.Path, e.Ref)
		if e.Platform != "" {
			s += " for platform " + e.Platform
		}
	case e.Platform != "":
		s = fmt.Sprintf("image %s has no platform %s", e.Ref, e.Platform)
	default:
		s = fmt.Sprintf("image %s not found in the registry", e.Ref)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += fmt.Sprintf(" (%v)", e.Err)
	}
	return s
}

// Unwrap returns the underlying error.
func (e *NotFoundError) Unwrap() error { return e.Err }

// TooLargeError reports a file inside the image that is larger than the client's maximum file
// size (WithMaxFileSize).
type TooLargeError struct {
	Ref, Path   string
	Size, Limit int64
}

// Error implements error.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("file %q in image %s is %d bytes, over the limit of %d bytes", e.Path, e.Ref, e.Size, e.Limit)
}

// NotRegularError reports a path inside the image that is not a regular file: a directory, a
// symbolic or hard link, a device. Path is the entry concerned, which may be a parent directory
// of the file asked for.
type NotRegularError struct {
	Ref, Path string
	// Type is the kind of entry: "directory", "symlink", "hardlink", ...
	Type string
	// Link is the target of a symbolic or hard link.
	Link string
}

// Error implements error.
func (e *NotRegularError) Error() string {
	s := fmt.Sprintf("%q in image %s is a %s, not a regular file", e.Path, e.Ref, e.Type)
	if e.Link != "" {
		s += fmt.Sprintf(" (pointing to %q)", e.Link)
	}
	return s
}

// ReferenceError reports an image reference or platform that does not parse. It is a usage
// error: nothing was sent to a registry.
type ReferenceError struct {
	// Ref is the reference or platform as given.
	Ref string
	// Platform is true when Ref is a platform (os/arch[/variant]).
	Platform bool
	Err      error
}

// Error implements error.
func (e *ReferenceError) Error() string {
	if e.Platform {
		return fmt.Sprintf("invalid platform %q: %v", e.Ref, e.Err)
	}
	return fmt.Sprintf("invalid reference %q: %v", e.Ref, e.Err)
}

// Unwrap returns the underlying error.
func (e *ReferenceError) Unwrap() error { return e.Err }

// classify turns an error of go-containerregistry into one of our typed errors where a caller
// branches on it, and leaves other errors alone. ref names the image in NotFoundError.
func classify(err error, registry, ref string) error {
	if err == nil {
		return nil
	}
	var (
		ue *UnavailableError
		ae *AuthError
		ne *NotFoundError
	)
	if errors.As(err, &ue) || errors.As(err, &ae) || errors.As(err, &ne) {
		return err
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch {
		case te.StatusCode == http.StatusTooManyRequests || hasCode(te, transport.TooManyRequestsErrorCode):
			return &UnavailableError{Registry: registry, RateLimited: true, Status: te.StatusCode, Err: err}
		case te.StatusCode >= 500:
			return &UnavailableError{Registry: registry, Status: te.StatusCode, Err: err}
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden ||
			hasCode(te, transport.UnauthorizedErrorCode) || hasCode(te, transport.DeniedErrorCode):
			return &AuthError{Registry: registry, Err: err}
		case te.StatusCode == http.StatusNotFound || hasCode(te, transport.ManifestUnknownErrorCode) ||
			hasCode(te, transport.NameUnknownErrorCode) || hasCode(te, transport.BlobUnknownErrorCode):
			return &NotFoundError{Ref: ref, Err: err}
		}
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &UnavailableError{Registry: registry, Timeout: true, Err: err}
	}
	var netErr net.Error
	timeout := errors.As(err, &netErr) && netErr.Timeout()
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if timeout || errors.As(err, &opErr) || errors.As(err, &dnsErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return &UnavailableError{Registry: registry, Timeout: timeout, Err: err}
	}
	return err
}

func hasCode(te *transport.Error, code transport.ErrorCode) bool {
	for _, d := range te.Errors {
		if d.Code == code {
			return true
		}
	}
	return false
}
