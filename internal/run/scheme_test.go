package run_test

import (
	"time"

	"testing"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

// TestExitCodeIndependentOfScheme: a fleet that answers nothing but 503 has not answered, over
// http as over https (where a completed TLS handshake once counted as an answer), and the
// exit-code decision, a function of the report alone, says 3 for both.
func TestExitCodeIndependentOfScheme(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"http", false}, {"https", true}} {
		t.Run(tc.name, func(t *testing.T) {
			specs := []testkit.Spec{{Status: 503}, {Status: 503}}
			w := startWorld(t, specs, worldOpts{tls: tc.tls, caFile: tc.tls, retries: 1})
			rep := w.verify(t, 15*time.Second)
			if rep.Verdict != model.VerdictError || rep.Error == "" {
				t.Errorf("verdict %q, error %q; want verdict error and a reason", rep.Verdict, rep.Error)
			}
			if code := rep.ExitCode(model.SeverityError); code != model.ExitUnverifiable {
				t.Errorf("exit code %d, want %d", code, model.ExitUnverifiable)
			}
		})
	}
}
