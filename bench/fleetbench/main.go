// Command fleetbench is polygraph's fleet benchmark (docs/benchmark.md). It starts a simulated
// fleet of 10,000 instances and its CDN in a child process (itself, re-executed with
// -serve-world), then runs `polygraph verify` and the hand-written fetcher of bench/fetcher
// against it, each as a separate process, several times, and prints wall time and peak RSS
// with the ratios polygraph must stay within.
//
//	go run ./bench/fleetbench [-runs 3] [-instances 10000]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/polygraph-dev/polygraph/bench"
	"github.com/polygraph-dev/polygraph/bench/fetch"
)

// Targets: polygraph's wall time and peak RSS at most these multiples of the fetcher's.
const (
	wallTarget = 1.25
	rssTarget  = 1.5
)

func main() {
	wl := bench.DefaultWorkload()
	serve := flag.Bool("serve-world", false, "run the simulated world (internal: the benchmark starts itself with it)")
	dir := flag.String("dir", "", "directory for the world's config (with -serve-world)")
	runs := flag.Int("runs", 3, "runs of each program")
	flag.IntVar(&wl.Instances, "instances", wl.Instances, "instances in the fleet")
	flag.IntVar(&wl.ProbeConcurrency, "concurrency", wl.ProbeConcurrency, "instances probed at once")
	flag.IntVar(&wl.CDNConcurrency, "cdn-concurrency", wl.CDNConcurrency, "CDN requests at once")
	flag.DurationVar(&wl.Latency, "latency", wl.Latency, "latency added to every instance answer")
	keep := flag.Bool("keep", false, "keep the temporary directory (binaries, config, reports)")
	polygraphBin := flag.String("polygraph", "", "polygraph binary to measure (default: built from ./cmd/polygraph), to compare a change")
	flag.Parse()
	if *serve {
		if err := bench.Serve(wl, *dir, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "fleetbench world:", err)
			os.Exit(1)
		}
		return
	}
	if *runs < 1 || wl.Instances < 1 {
		fmt.Fprintln(os.Stderr, "fleetbench: -runs and -instances must be at least 1")
		os.Exit(2)
	}
	if err := benchmark(wl, *runs, *keep, *polygraphBin); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

// sample is one measured run of one program.
type sample struct {
	wall time.Duration
	cpu  time.Duration // user + system
	rss  int64         // bytes
}

func benchmark(wl bench.Workload, runs int, keep bool, polygraphBin string) error {
	if err := bench.RaiseNoFile(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "fleetbench-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Printf("keeping %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	polygraph, fetcher := filepath.Join(tmp, "polygraph"), filepath.Join(tmp, "fetcher")
	builds := map[string]string{polygraph: "./cmd/polygraph", fetcher: "./bench/fetcher"}
	if polygraphBin != "" {
		delete(builds, polygraph)
		if polygraph, err = filepath.Abs(polygraphBin); err != nil {
			return err
		}
	}
	for bin, pkg := range builds {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Dir, build.Stderr = root, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building %s: %w", pkg, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	started := time.Now()
	world, err := bench.StartProcess(self, "-serve-world", "-dir", tmp,
		"-instances", strconv.Itoa(wl.Instances), "-latency", wl.Latency.String(),
		"-concurrency", strconv.Itoa(wl.ProbeConcurrency), "-cdn-concurrency", strconv.Itoa(wl.CDNConcurrency))
	if err != nil {
		return err
	}
	defer world.Close()
	r := world.Ready
	fmt.Printf("world: %d instances (%d builds, %d-byte manifests, %v latency), %d unique assets, %d missing on the CDN; started in %v\n",
		wl.Instances, r.Builds, r.ManifestBytes, wl.Latency, r.UniqueAssets, r.Missing, time.Since(started).Round(time.Millisecond))
	fmt.Printf("concurrency %d, CDN concurrency %d, %d runs each, %s\n\n", wl.ProbeConcurrency, wl.CDNConcurrency, runs, cpuLine())

	fetcherArgs := []string{"-targets", r.Targets, "-host", r.Host, "-path", r.ManifestPath, "-cdn", r.CDN,
		"-concurrency", strconv.Itoa(wl.ProbeConcurrency), "-cdn-concurrency", strconv.Itoa(wl.CDNConcurrency)}
	var fs, ps []sample
	loadBefore := loadAvg()
	for i := range runs {
		// Alternate which program goes first, so neither always meets a cooler machine.
		order := []string{"fetcher", "polygraph"}
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, prog := range order {
			var s sample
			var err error
			if prog == "fetcher" {
				s, err = runFetcher(fetcher, fetcherArgs, r)
				fs = append(fs, s)
			} else {
				s, err = runPolygraph(polygraph, r, filepath.Join(tmp, fmt.Sprintf("report-%d.json", i)))
				ps = append(ps, s)
			}
			if err != nil {
				return fmt.Errorf("run %d of %s: %w", i+1, prog, err)
			}
			fmt.Printf("run %d %-9s %7.2fs wall %7.2fs CPU %7.1f MiB\n", i+1, prog, s.wall.Seconds(), s.cpu.Seconds(), mib(s.rss))
		}
	}
	fmt.Printf("\nload average before: %s, after: %s (other work on the machine skews the figures)\n\n", loadBefore, loadAvg())
	report(fs, ps)
	return nil
}

// runFetcher runs the fetcher and checks it found what the world holds.
func runFetcher(bin string, args []string, r bench.Ready) (sample, error) {
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	s, err := measure(cmd)
	if err != nil {
		return s, err
	}
	var res fetch.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return s, fmt.Errorf("reading the fetcher's result %q: %w", out.String(), err)
	}
	if res.UniqueAssets != r.UniqueAssets || res.Missing != r.Missing || res.Failed != 0 || res.CDNErrors != 0 {
		return s, fmt.Errorf("the fetcher found %+v; the world holds %d unique assets, %d missing", res, r.UniqueAssets, r.Missing)
	}
	return s, nil
}

// runPolygraph runs polygraph verify and checks it exited 1 (findings) with the right counts.
func runPolygraph(bin string, r bench.Ready, reportFile string) (sample, error) {
	out, err := os.Create(reportFile)
	if err != nil {
		return sample{}, err
	}
	defer out.Close()
	cmd := exec.Command(bin, "verify", "--config", r.Config, "--output", "json", "--timeout", "5m")
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	s, err := measure(cmd)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
	case err == nil:
		return s, errors.New("polygraph exited 0; the world holds findings (other builds, missing assets), want exit 1")
	default:
		return s, fmt.Errorf("polygraph: %w (want exit 1: findings)", err)
	}
	data, err := os.ReadFile(reportFile)
	if err != nil {
		return s, err
	}
	var rep struct {
		CDN struct {
			Checked, Missing, Skipped int
		} `json:"cdn"`
		Summary struct {
			Instances, Unreachable, Error int
		} `json:"summary"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return s, fmt.Errorf("reading polygraph's report: %w", err)
	}
	if rep.CDN.Checked != r.UniqueAssets || rep.CDN.Missing != r.Missing || rep.Summary.Unreachable != 0 || rep.Summary.Error != 0 {
		return s, fmt.Errorf("polygraph found cdn %+v, summary %+v; the world holds %d unique assets, %d missing", rep.CDN, rep.Summary, r.UniqueAssets, r.Missing)
	}
	return s, nil
}

// measure runs cmd and returns its wall time (start to exit), CPU time and peak RSS.
func measure(cmd *exec.Cmd) (sample, error) {
	start := time.Now()
	err := cmd.Run()
	s := sample{wall: time.Since(start)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			s.rss = ru.Maxrss * 1024 // kilobytes on Linux
			s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return s, err
}

func report(fs, ps []sample) {
	fw, fc, fr := stats(fs)
	pw, pc, pr := stats(ps)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "program\twall min\twall median\tCPU median\tpeak RSS min\tpeak RSS median\t")
	fmt.Fprintf(tw, "fetcher\t%.2fs\t%.2fs\t%.2fs\t%.1f MiB\t%.1f MiB\t\n", fw[0].Seconds(), fw[1].Seconds(), fc.Seconds(), mib(fr[0]), mib(fr[1]))
	fmt.Fprintf(tw, "polygraph\t%.2fs\t%.2fs\t%.2fs\t%.1f MiB\t%.1f MiB\t\n", pw[0].Seconds(), pw[1].Seconds(), pc.Seconds(), mib(pr[0]), mib(pr[1]))
	wallRatio, rssRatio := float64(pw[1])/float64(fw[1]), float64(pr[1])/float64(fr[1])
	fmt.Fprintf(tw, "polygraph / fetcher\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t\n",
		float64(pw[0])/float64(fw[0]), wallRatio, float64(pc)/float64(fc), float64(pr[0])/float64(fr[0]), rssRatio)
	tw.Flush()
	fmt.Printf("\nwall time (median): %.2fx, target <= %.2fx: %s\n", wallRatio, wallTarget, verdict(wallRatio <= wallTarget))
	fmt.Printf("peak RSS (median):  %.2fx, target <= %.2fx: %s\n", rssRatio, rssTarget, verdict(rssRatio <= rssTarget))
}

// stats returns the min and median wall times, the median CPU time, and the min and median
// RSS.
func stats(ss []sample) (wall [2]time.Duration, cpu time.Duration, rss [2]int64) {
	w := make([]time.Duration, len(ss))
	c := make([]time.Duration, len(ss))
	r := make([]int64, len(ss))
	for i, s := range ss {
		w[i], c[i], r[i] = s.wall, s.cpu, s.rss
	}
	slices.Sort(w)
	slices.Sort(c)
	slices.Sort(r)
	return [2]time.Duration{w[0], median(w)}, median(c), [2]int64{r[0], median(r)}
}

func median[T time.Duration | int64](xs []T) T {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func verdict(ok bool) string {
	if ok {
		return "within"
	}
	return "NOT within"
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// moduleRoot is the directory of go.mod, where the binaries are built from.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run fleetbench from inside the polygraph module")
	}
	return filepath.Dir(gomod), nil
}

// cpuLine describes the machine: the number of CPUs and the model name.
func cpuLine() string {
	model := ""
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs %s", runtime.NumCPU(), model)
}

// loadAvg is the 1-minute load average, to tell a quiet machine from a busy one.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(data))[0]
}
