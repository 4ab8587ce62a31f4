package fleet

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/awsfake"
	"github.com/polygraph-dev/polygraph/model"
)

// BenchmarkEC2Discover10k discovers 10,000 instances over 100 DescribeInstances pages, the
// fake answering each call after 20 ms. Run: go test ./fleet -run - -bench EC2 -benchtime 3x -benchmem
func BenchmarkEC2Discover10k(b *testing.B) {
	f, c, _ := fakeAWS(b)
	f.SetLatency(20 * time.Millisecond)
	f.EC2.SetPageSize(100)
	for i := range 10000 {
		f.EC2.Add(awsfake.Instance{ID: fmt.Sprintf("i-%016x", i+1), State: "running", PrivateIP: fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255),
			AZ: "us-east-1a", InstanceType: "c7g.large", AMI: "ami-0abc", LaunchTime: launched,
			Tags: map[string]string{"aws:autoscaling:groupName": "store-web-prod", "image-digest": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}})
	}
	src := NewEC2(c, EC2Options{AutoScalingGroups: []string{"store-web-prod"}, Port: 8080, DigestTag: "image-digest"})
	var before, after runtime.MemStats
	var kept []model.Target
	b.ResetTimer()
	for b.Loop() {
		f.Reset()
		kept = nil
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := Discover(context.Background(), src)
		if err != nil || len(got) != 10000 {
			b.Fatalf("%d targets, %v", len(got), err)
		}
		kept = got
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(len(f.Calls("DescribeInstances"))), "calls/op")
	// What discovery keeps: the 10,000 targets, once the pages are garbage and equal labels
	// share one map.
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(len(kept)), "retained-B/target")
}
