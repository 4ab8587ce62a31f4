package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// What go-retryablehttp v0.7.8 does, and why this file looks the way it does:
//
//   - DefaultBackoff is exponential without jitter, and honours Retry-After on 429/503 without
//     any cap: we use FullJitter and withRetryAfter (capped).
//   - DefaultRetryPolicy retries 429, 5xx but 501 and connection errors except certificate,
//     scheme, header and redirect-limit errors (matched on message text); it cannot know our
//     own permanent errors (a body over its cap, an undecodable encoding, oversized headers, a
//     request the rate limiter would hold past the deadline), so Retryable is our own policy.
//   - CheckRetry is consulted before RetryMax: the last attempt must not take from the budget.
//   - Backoff receives the attempt number from 0 for the first retry.
//   - A response that will be retried is drained (up to 4 KiB) and closed; when retries run out
//     the default ErrorHandler drains and drops the last response too: we use
//     PassthroughErrorHandler and keep it. If the context ends during a backoff wait, Do returns
//     (nil, ctx.Err()): the last status is kept in the request's tries via ResponseLogHook.
//   - After a request fails with an error, it calls HTTPClient.CloseIdleConnections: every
//     origin has its own transport, so one bad host cannot drop another's connections.
//   - A response handler (Request.SetResponseHandler) runs inside the retry loop: we read bodies
//     there, so a body that breaks off is retried like a connection error.

// Backoff computes the wait before a retry. attemptNum counts from 0 for the first retry, as
// go-retryablehttp passes it; resp is the response that is being retried (nil after a
// connection error). It is the same function type as go-retryablehttp's, so any of its
// policies fit.
type Backoff = retryablehttp.Backoff

// FullJitter waits a uniformly random time between 0 and min(maxWait, minWait·2^attemptNum):
// the "full jitter" of exponential backoff, which spreads the retries of many clients apart
// instead of synchronising them into waves.
func FullJitter(minWait, maxWait time.Duration, attemptNum int, _ *http.Response) time.Duration {
	ceiling := float64(minWait) * math.Pow(2, float64(max(attemptNum, 0)))
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
// maxRetryAfter. A Retry-After is honoured even when it asks for less than the backoff would
// wait, and never for more than the cap.
func withRetryAfter(b Backoff, maxRetryAfter time.Duration, now func() time.Time) Backoff {
	return func(minWait, maxWait time.Duration, attemptNum int, resp *http.Response) time.Duration {
		if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now()); ok {
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
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		if s > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Budget caps the retries of a whole run: retries may add at most Ratio of the requests that
// were answered, plus Floor. Retries are earned by answers, not by attempts: they are worth
// spending on the odd flaky instance of a fleet that answers, and wasted on a fleet (or CDN)
// that is down, where they would only amplify the outage. A fully dead fleet of 1,000
// instances then costs 1,000 attempts plus Floor, not 1,000 plus Ratio·1,000; a fleet that
// answers gets Ratio·answers + Floor, never more than Ratio of its first attempts + Floor. A
// nil *Budget allows every retry.
type Budget struct {
	Ratio float64
	Floor int64

	first    atomic.Int64
	answered atomic.Int64
	retries  atomic.Int64
	denied   atomic.Int64
}

// NewBudget returns a budget allowing ratio·answered requests + floor retries.
func NewBudget(ratio float64, floor int64) *Budget { return &Budget{Ratio: ratio, Floor: floor} }

func (b *Budget) attempt() {
	if b != nil {
		b.first.Add(1)
	}
}

// answer records a request that got an answer it keeps (not one worth retrying).
func (b *Budget) answer() {
	if b != nil {
		b.answered.Add(1)
	}
}

// allow takes one retry from the budget, reporting whether it was available.
func (b *Budget) allow() bool {
	if b == nil {
		return true
	}
	limit := int64(b.Ratio*float64(b.answered.Load())) + b.Floor
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
	if b == nil {
		return 0, 0, 0
	}
	return b.first.Load(), b.retries.Load(), b.denied.Load()
}

// Retryable reports whether a request that ended with resp or err is worth another attempt:
// connection errors (refused, reset, timed out, a body cut short), 429, and 5xx except 501.
// Certificate failures, redirect refusals, bodies over their cap and undecodable encodings
// are permanent: asking again gives the same answer.
func Retryable(resp *http.Response, err error) bool {
	if err != nil {
		var (
			certErr  *CertError
			verErr   *tls.CertificateVerificationError
			unknown  x509.UnknownAuthorityError
			hostErr  x509.HostnameError
			invalErr x509.CertificateInvalidError
		)
		switch {
		case errors.Is(err, context.Canceled):
			return false
		case errors.Is(err, ErrTooLarge), errors.Is(err, ErrEncoding), errors.Is(err, errRedirect), errors.Is(err, errRateDeadline),
			errors.Is(err, ErrNoFileDescriptors):
			return false
		case strings.Contains(err.Error(), "response headers exceeded"), // over maxHeaderBytes
			strings.Contains(err.Error(), "gave HTTP response to HTTPS client"),
			strings.Contains(err.Error(), "does not look like a TLS handshake"):
			return false // asking again gives the same answer
		case errors.As(err, &certErr), errors.As(err, &verErr), errors.As(err, &unknown),
			errors.As(err, &hostErr), errors.As(err, &invalErr):
			return false
		}
		return true
	}
	if resp == nil {
		return true
	}
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests:
		return true
	case s == http.StatusNotImplemented:
		return false
	case s >= 500 && s <= 599:
		return true
	}
	return false
}

var errRedirect = errors.New("redirect refused")

// tries is the state of one logical request across its attempts; it travels in the request's
// context so the retry policy knows which attempt it judges.
type tries struct {
	n          int  // attempts sent so far
	lastStatus int  // status of the last response, 0 when none
	answered   bool // the retry budget has counted this request's answer
}

type triesKey struct{}

func triesOf(ctx context.Context) *tries {
	t, _ := ctx.Value(triesKey{}).(*tries)
	return t
}

// retryPolicy retries what Retryable allows while attempts remain and the run's budget allows,
// and never after the context is done. The budget is consulted only when a retry would really
// be sent: go-retryablehttp asks CheckRetry before it checks RetryMax, so the last attempt
// must not take (and waste) a retry from the budget.
func retryPolicy(b *Budget, retries int) retryablehttp.CheckRetry {
	return func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if !Retryable(resp, err) {
			// go-retryablehttp asks again after a response handler ran: count a request once.
			if t := triesOf(ctx); err == nil && resp != nil && (t == nil || !t.answered) {
				if t != nil {
					t.answered = true
				}
				b.answer()
			}
			return false, nil
		}
		if t := triesOf(ctx); t != nil && t.n > retries {
			return false, nil
		}
		return b.allow(), nil
	}
}

// retryClient wraps hc in go-retryablehttp with our policies. Requests are counted by the
// transport (countingTransport), which sees redirects and retries alike.
func retryClient(hc *http.Client, o *options) *retryablehttp.Client {
	b := o.budget
	return &retryablehttp.Client{
		HTTPClient:   hc,
		RetryWaitMin: o.waitMin,
		RetryWaitMax: o.waitMax,
		RetryMax:     max(o.retries, 0),
		CheckRetry:   retryPolicy(b, max(o.retries, 0)),
		Backoff:      withRetryAfter(o.backoff, o.maxRetryAfter, time.Now),
		// Keep the last response when retries run out: the library's default drains and
		// drops it, and with it the status that says what went wrong.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
		RequestLogHook: func(_ retryablehttp.Logger, req *http.Request, attempt int) {
			if attempt == 0 {
				b.attempt()
			}
			if t := triesOf(req.Context()); t != nil {
				t.n = attempt + 1
			}
		},
		ResponseLogHook: func(_ retryablehttp.Logger, resp *http.Response) {
			if t := triesOf(resp.Request.Context()); t != nil {
				t.lastStatus = resp.StatusCode
			}
		},
	}
}
