package probe

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Backoff computes the wait before retry attemptNum (1 for the first retry). It is the same
// function type as go-retryablehttp's, so any of its policies fit.
type Backoff = retryablehttp.Backoff

// FullJitter waits a uniformly random time between 0 and min(max, min·2^(attempt-1)): the
// "full jitter" of exponential backoff, which spreads retries of many clients apart.
func FullJitter(minWait, maxWait time.Duration, attemptNum int, _ *http.Response) time.Duration {
	ceiling := float64(minWait) * math.Pow(2, float64(max(attemptNum-1, 0)))
	if ceiling > float64(maxWait) || math.IsInf(ceiling, 0) {
		ceiling = float64(maxWait)
	}
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// NoWait retries at once; for tests.
func NoWait(time.Duration, time.Duration, int, *http.Response) time.Duration { return 0 }

// withRetryAfter wraps a backoff so that a Retry-After on 429 or 503 is honoured, capped at
// maxRetryAfter.
func withRetryAfter(b Backoff, maxRetryAfter time.Duration) Backoff {
	return func(minWait, maxWait time.Duration, attemptNum int, resp *http.Response) time.Duration {
		if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				return min(d, maxRetryAfter)
			}
		}
		return b(minWait, maxWait, attemptNum, resp)
	}
}

func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Budget caps the retries of a whole run: retries may add at most Ratio of first attempts,
// plus Floor. A dead fleet then costs about one request per instance, not 1+retries.
type Budget struct {
	Ratio float64
	Floor int64

	first   atomic.Int64
	retries atomic.Int64
	denied  atomic.Int64
}

// NewBudget returns a budget allowing ratio·first attempts + floor retries.
func NewBudget(ratio float64, floor int64) *Budget { return &Budget{Ratio: ratio, Floor: floor} }

func (b *Budget) attempt() {
	if b != nil {
		b.first.Add(1)
	}
}

// allow takes one retry from the budget, reporting whether it was available.
func (b *Budget) allow() bool {
	if b == nil {
		return true
	}
	limit := int64(b.Ratio*float64(b.first.Load())) + b.Floor
	for {
		r := b.retries.Load()
		if r >= limit {
			b.denied.Add(1)
			return false
		}
		if b.retries.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// Stats returns the first attempts, retries taken and retries denied so far.
func (b *Budget) Stats() (first, retries, denied int64) {
	return b.first.Load(), b.retries.Load(), b.denied.Load()
}

// retryPolicy retries what is retryable (connection errors, 429, 5xx but 501) while the run's
// budget allows, and never after the context is done.
func retryPolicy(b *Budget) retryablehttp.CheckRetry {
	return func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		retry, cerr := retryablehttp.DefaultRetryPolicy(ctx, resp, err)
		if !retry || cerr != nil {
			return false, cerr
		}
		return b.allow(), nil
	}
}

// counter counts HTTP requests sent.
type counter struct{ n atomic.Int64 }

// retryClient wraps hc in go-retryablehttp with our policies; attempts counts every request.
func retryClient(hc *http.Client, retries int, backoff Backoff, waitMin, waitMax, maxRetryAfter time.Duration, b *Budget, attempts *counter) *retryablehttp.Client {
	return &retryablehttp.Client{
		HTTPClient:   hc,
		RetryWaitMin: waitMin,
		RetryWaitMax: waitMax,
		RetryMax:     retries,
		CheckRetry:   retryPolicy(b),
		Backoff:      withRetryAfter(backoff, maxRetryAfter),
		ErrorHandler: retryablehttp.PassthroughErrorHandler, // keep the last response
		RequestLogHook: func(_ retryablehttp.Logger, _ *http.Request, attempt int) {
			if attempt == 0 {
				b.attempt()
			}
			if attempts != nil {
				attempts.n.Add(1)
			}
		},
	}
}
