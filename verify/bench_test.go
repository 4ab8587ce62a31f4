package verify

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/polygraph-dev/polygraph/model"
)

// BenchmarkJudge18000 judges 18,000 instances (10% on another build, one asset missing) and
// reports, besides the allocations, the heap the report and the judge's state hold once the
// judge returns (retained-B/instance): what a large fleet costs per instance after probing.
// "held" fills Report.Instances; "compact" leaves them to be built as they are rendered, as
// the CLI's verify does.
func BenchmarkJudge18000(b *testing.B) {
	const n = 18000
	list := make([]model.Observation, n)
	for i := range list {
		build := "A"
		if i%10 == 0 {
			build = "B"
		}
		list[i] = obs(fmt.Sprintf("i-%017x", i), build)
	}
	for _, compact := range []bool{false, true} {
		name := "held"
		in := Input{Release: release(), Observations: list, CDN: cdn(buildB[0].Ref)}
		if compact {
			name = "compact"
			in.List, in.Observations, in.CompactInstances = sliceList(list), nil, true
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var retained uint64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				r := Judge(in)
				runtime.GC()
				runtime.ReadMemStats(&after)
				if r.NumInstances() != n {
					b.Fatalf("%d instances judged, want %d", r.NumInstances(), n)
				}
				retained = after.HeapAlloc - before.HeapAlloc
				runtime.KeepAlive(r)
			}
			b.ReportMetric(float64(retained)/n, "retained-B/instance")
		})
	}
}
