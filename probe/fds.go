package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
)

// ErrNoFileDescriptors is the error of a dial that failed because polygraph itself ran out of
// file descriptors (EMFILE, ENFILE): its own limit, which says nothing about the instance or
// the CDN it was dialling. It is never retried, and the run that meets it could not verify.
var ErrNoFileDescriptors = errors.New("polygraph ran out of file descriptors (EMFILE/ENFILE): a local limit, not a fault of the host dialled; raise `ulimit -n` or lower probe.concurrency and cdn.concurrency")

// fdWatch records whether any dial through it ran out of file descriptors.
type fdWatch struct{ hit atomic.Bool }

// dial wraps next so that running out of file descriptors is recorded and reported as
// ErrNoFileDescriptors (the cause still wrapped).
func (w *fdWatch) dial(next DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil && (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) {
			w.hit.Store(true)
			return nil, fmt.Errorf("dialling %s: %w (%w)", addr, ErrNoFileDescriptors, err)
		}
		return c, err
	}
}
