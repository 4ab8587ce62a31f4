package registry

import (
	"context"
	"fmt"
)

// bounded runs f and returns when it does or when ctx ends, whichever comes first. The
// registry library sleeps between its own retries without watching the context (up to 3s with
// the default backoff); this keeps the run's deadline hard. An abandoned call finishes in the
// background (its requests carry ctx, so only a backoff sleep can outlive it) and its result is
// dropped.
func bounded[T any](ctx context.Context, what, ref, registry string, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%s %q: %w", what, ref, &UnavailableError{Registry: registry, Timeout: true, Err: ctx.Err()})
	}
}

// registryOf names the registry of ref for errors ("" when ref does not parse; f then reports
// that itself).
func (c *Client) registryOf(ref string) string {
	r, err := c.parseRef(ref)
	if err != nil {
		return ""
	}
	return r.Context().RegistryStr()
}
