package probe_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/probe"
)

// BenchmarkFleet probes a 1,000-instance fleet, all healthy or with 30% of instances dead
// (connections refused), with the defaults a real run uses: 3 retries, full jitter from
// 100ms, a retry budget of 20% of answers + 10, 64 instances at once. It reports the requests sent per
// run and the wall time of a run.
//
//	go test ./probe -run '^$' -bench Fleet -benchtime 3x
func BenchmarkFleet(b *testing.B) {
	for _, bc := range []struct {
		dead     int
		noBudget bool
	}{{0, false}, {30, false}, {30, true}} {
		dead := bc.dead
		name := fmt.Sprintf("dead=%d%%", dead)
		if bc.noBudget {
			name += "/no-budget" // for comparison: what the budget saves
		}
		b.Run(name, func(b *testing.B) {
			specs := make([]testkit.Spec, 1000)
			for i := range specs {
				specs[i].Dead = i%100 < dead
			}
			f := fleetB(b, specs)
			targets := f.Targets()
			var requests, unreachable int
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				opts := []probe.Option{} // a new budget per run, as each run has
				if bc.noBudget {
					opts = append(opts, probe.WithBudget(probe.NewBudget(0, 1<<40)))
				}
				p := probe.New(opts...)
				for _, o := range p.Probe(context.Background(), targets) {
					if !o.Reached {
						unreachable++
					}
				}
				requests += p.Requests()
			}
			b.ReportMetric(float64(requests)/float64(b.N), "requests/run")
			b.ReportMetric(float64(unreachable)/float64(b.N), "unreachable/run")
			b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/run")
		})
	}
}

func fleetB(b *testing.B, specs []testkit.Spec) *testkit.Fleet {
	b.Helper()
	build := testkit.CRABuild("bench", 200, 40)
	for i := range specs {
		if specs[i].Build == nil {
			specs[i].Build = build
		}
	}
	f, err := testkit.StartFleet(specs, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(f.Close)
	return f
}

// BenchmarkHugeBodies measures the prober's peak memory (VmHWM of a child process that only
// probes) with 100 instances each answering the manifest with a 300 MB body, streamed by the
// fleet in this process and never held in memory. It reports the child's peak RSS.
//
//	go test ./probe -run '^$' -bench HugeBodies -benchtime 1x
func BenchmarkHugeBodies(b *testing.B) {
	for _, chunked := range []bool{false, true} {
		name := "content-length"
		if chunked {
			name = "chunked"
		}
		b.Run(name, func(b *testing.B) {
			specs := make([]testkit.Spec, 100)
			for i := range specs {
				specs[i].BodySize, specs[i].Chunked = 300<<20, chunked
			}
			f := fleetB(b, specs)
			var addrs []string
			for _, in := range f.Instances {
				addrs = append(addrs, in.Address)
			}
			var peak, took float64
			for range b.N {
				cmd := exec.Command(os.Args[0], "-test.run=^TestHugeBodiesChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), "POLYGRAPH_HUGE_BODIES="+strings.Join(addrs, ","))
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("child: %v\n%s", err, out)
				}
				var hwm, ms, invalid int
				for _, line := range strings.Split(string(out), "\n") {
					if _, err := fmt.Sscanf(line, "child: vmhwm_kb=%d ms=%d invalid=%d", &hwm, &ms, &invalid); err == nil {
						break
					}
				}
				if hwm == 0 || invalid != 100 {
					b.Fatalf("child said:\n%s", out)
				}
				peak, took = max(peak, float64(hwm)/1024), float64(ms)
			}
			b.ReportMetric(peak, "peak-MiB")
			b.ReportMetric(took, "ms/run")
		})
	}
}

// TestHugeBodiesChild is BenchmarkHugeBodies' child process; it does nothing in a normal run.
func TestHugeBodiesChild(t *testing.T) {
	addrs := os.Getenv("POLYGRAPH_HUGE_BODIES")
	if addrs == "" {
		t.Skip("run by BenchmarkHugeBodies")
	}
	var targets []model.Target
	for i, a := range strings.Split(addrs, ",") {
		targets = append(targets, model.Target{ID: "web-" + strconv.Itoa(i), Address: a})
	}
	start := time.Now()
	obs := probe.New(probe.WithTimeout(time.Minute)).Probe(context.Background(), targets)
	invalid := 0
	for _, o := range obs {
		if o.Reached && strings.Contains(o.ManifestInvalid, "size cap") {
			invalid++
		}
	}
	runtime.GC()
	fmt.Printf("child: vmhwm_kb=%d ms=%d invalid=%d\n", vmHWM(t), time.Since(start).Milliseconds(), invalid)
}

// vmHWM reads the process's peak resident set size in KiB from /proc/self/status.
func vmHWM(t *testing.T) int {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}
