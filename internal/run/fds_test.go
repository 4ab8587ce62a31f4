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
			var n, toInstances atomic.Int64
			cdnHost := strings.TrimPrefix(w.cdn.URL, "http://")
			cdnHost = cdnHost[:strings.Index(cdnHost, "/")]
			// Every other dial fails as a process at its limit would.
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr != cdnHost {
					toInstances.Add(1)
				}
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
			// The CDN is checked while instances are probed: its dials (each asset once at
			// most) come beside the instances'.
			if got, all := toInstances.Load(), n.Load(); got > 12 || all > 12+int64(len(w.build.Assets)) {
				t.Errorf("%d dials, %d of them to instances: EMFILE must not be retried", all, got)
			}
		})
	}
}
