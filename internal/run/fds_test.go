package run_test

import (
	"context"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// TestOutOfFileDescriptors: dials failing with EMFILE or ENFILE are polygraph's own limit, not
// the instances' fault: the run could not verify (exit 3) and says so, and no instance is
// named unreachable for it.
func TestOutOfFileDescriptors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			w := startWorld(t, make([]testkit.Spec, 6), worldOpts{})
			var n atomic.Int64
			// Every other dial fails as a process at its limit would.
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				if n.Add(1)%2 == 0 {
					return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("socket", errno)}
				}
				return w.dials.dial(ctx, network, addr)
			}
			rep := w.verify(t, 10*time.Second, probe.WithDialer(dial))
			if rep.Verdict != model.VerdictError || !strings.Contains(rep.Error, "ran out of file descriptors") {
				t.Fatalf("verdict %s, error %q", rep.Verdict, rep.Error)
			}
			if code := rep.ExitCode(model.SeverityError); code != model.ExitUnverifiable {
				t.Errorf("exit %d, want 3", code)
			}
			for _, f := range rep.Findings {
				if f.Kind == model.KindUnreachable {
					t.Errorf("instance blamed for a local limit: %+v", f)
				}
			}
			if got := n.Load(); got > 12 {
				t.Errorf("%d dials: EMFILE must not be retried", got)
			}
		})
	}
}
