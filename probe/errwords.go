package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
)

func deadlineWords(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "the run's deadline passed"
	}
	return "the run was cancelled"
}

// brokeOff says in plain words why a body broke off.
func brokeOff(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "cut short: fewer bytes than announced"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), strings.Contains(msg, "Client.Timeout"), strings.Contains(msg, "timeout"):
		return "timed out while reading it"
	case strings.Contains(msg, "connection reset"):
		return "connection reset"
	}
	return msg
}

// describe turns a client error into plain words naming the request ("GET http://...").
func describe(ctx context.Context, err error, what string, st *tries) error {
	if ctx.Err() != nil {
		if st != nil && st.lastStatus != 0 {
			return &wordsErr{msg: fmt.Sprintf("%s: answered %d, then %s before a usable answer", what, st.lastStatus, deadlineWords(ctx)), err: err}
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &wordsErr{msg: what + ": no answer by the run's deadline", err: err}
		}
		return &wordsErr{msg: what + ": the run was cancelled", err: err}
	}
	err = cleanErr(err, what)
	if st != nil && st.n > 1 {
		return fmt.Errorf("%w (after %d attempts)", err, st.n)
	}
	return err
}

// cleanErr turns a client error into plain words naming the request ("GET http://..."),
// keeping the cause for errors.Is/As.
func cleanErr(err error, what string) error {
	var ce *CertError
	if errors.As(err, &ce) {
		return fmt.Errorf("%s: %w", what, ce)
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	msg := inner.Error()
	switch {
	case errors.Is(err, context.Canceled):
		msg = "the run was cancelled"
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(msg, "Client.Timeout"), strings.Contains(msg, "timeout"):
		msg = "timed out"
	case strings.Contains(msg, "connection refused"):
		msg = "connection refused"
	case strings.Contains(msg, "connection reset"):
		msg = "connection reset"
	}
	return &wordsErr{msg: what + ": " + msg, err: err}
}

type wordsErr struct {
	msg string
	err error
}

func (e *wordsErr) Error() string { return e.msg }
func (e *wordsErr) Unwrap() error { return e.err }
