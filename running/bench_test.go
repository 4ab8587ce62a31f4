package running

import (
	"context"
	"fmt"
	"runtime"
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
	var before, after runtime.MemStats
	var kept []model.RunningDigest
	b.ResetTimer()
	for b.Loop() {
		f.Reset()
		kept = nil
		runtime.GC()
		runtime.ReadMemStats(&before)
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
		kept = got
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// What the run keeps of the answers: one result per instance.
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(len(kept)), "retained-B/instance")
	b.ReportMetric(float64(sends), "SendCommand/op")
	b.ReportMetric(float64(lists), "ListCommandInvocations/op")
}
