package bench_test

import (
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/bench"
	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/report"
)

var (
	world    = flag.String("world", "", "config of a running world (fleetbench -serve-world -dir D writes D/polygraph.yaml); default: start one of 10,000 instances")
	peakHeap = flag.String("peakheap", "", "write a heap profile taken when the live heap peaked to this file")
)

// BenchmarkVerify runs what `polygraph verify --output json` runs (load the config, verify,
// render the report) in-process against the benchmark's world, which runs in a process of
// its own so that profiles show polygraph alone:
//
//	go test ./bench -run '^$' -bench Verify -benchtime 1x -cpuprofile cpu.out -memprofile mem.out -peakheap peak.out
func BenchmarkVerify(b *testing.B) {
	if err := bench.RaiseNoFile(); err != nil {
		b.Fatal(err)
	}
	path := *world
	if path == "" {
		bin := filepath.Join(b.TempDir(), "fleetbench")
		build := exec.Command("go", "build", "-o", bin, "./fleetbench")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			b.Fatal(err)
		}
		p, err := bench.StartProcess(bin, "-serve-world", "-dir", b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		path = p.Ready.Config
	}
	stop := watchPeak(b, *peakHeap)
	defer stop()
	for b.Loop() {
		cfg, err := config.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := run.Verify(context.Background(), cfg, run.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Summary.Unreachable != 0 || rep.Summary.Error != 0 {
			b.Fatalf("%d instances unreachable, %d in error", rep.Summary.Unreachable, rep.Summary.Error)
		}
		if err := report.Render(io.Discard, rep, "json", report.Options{}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.CDN.Checked), "assets/op")
	}
}

// watchPeak samples the live heap (as the last GC measured it) every 50ms and, at each new
// high, writes a heap profile to file: the last one written shows what was live at the peak.
// It reports the peak, and the memory the runtime took from the OS, as metrics.
func watchPeak(b *testing.B, file string) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	go func() {
		defer close(finished)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak {
				peak = v
				if file != "" {
					writeHeap(b, file)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		b.ReportMetric(float64(peak)/(1<<20), "peak-live-MiB")
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB")
	}
}

func writeHeap(b *testing.B, file string) {
	f, err := os.Create(file)
	if err != nil {
		b.Error(err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Error(err)
	}
}
