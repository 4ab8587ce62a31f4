package running

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/awsfake"
	"github.com/polygraph-dev/polygraph/model"
)

// BenchmarkSSM1000 reads the running digests of 1,000 instances through SSM, the fake
// answering each call after 20 ms and every invocation ending at once (scripts are answered
// by a canned runner, not bash: this measures polygraph's calls, not the instances).
// Run: go test ./running -run - -bench SSM -benchtime 3x -benchmem
func BenchmarkSSM1000(b *testing.B) {
	f, c := fakeSSM(b)
	f.SetLatency(20 * time.Millisecond)
	f.SSM.SetRunner(cannedRunner)
	targets := make([]model.Target, 1000)
	for i := range targets {
		targets[i].ID = fmt.Sprintf("i-%016x", i+1)
		f.SSM.Manage(targets[i].ID, awsfake.SSMInstance{})
	}
	src, err := NewSSM(c, "web")
	if err != nil {
		b.Fatal(err)
	}
	var sends, lists int
	b.ResetTimer()
	for b.Loop() {
		f.Reset()
		got, err := src.RunningDigests(context.Background(), targets)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range got {
			if r.ImageID != releaseID {
				b.Fatalf("%+v", r)
			}
		}
		sends, lists = len(f.Calls("SendCommand")), len(f.Calls("ListCommandInvocations"))
	}
	b.ReportMetric(float64(sends), "SendCommand/op")
	b.ReportMetric(float64(lists), "ListCommandInvocations/op")
}
