// Command diagbench measures `polygraph diagnose` beside `polygraph verify` on the same fleet:
// 10,000 instances in three groups (80% on the release, 15% on a rebuild re-pushed under the
// release tag, 5% on the older release), a registry holding the three images and a CDN. The
// world runs in a child process (itself, re-executed with -serve-world); each command runs as
// a separate process, alternating, and the wall time, CPU time and peak RSS are printed.
//
//	go run ./bench/diagbench [-runs 3] [-instances 10000]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polygraph-dev/polygraph/bench"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/registry/regtest"
)

func main() {
	serve := flag.Bool("serve-world", false, "run the simulated world (internal)")
	dir := flag.String("dir", "", "directory for the world's config (with -serve-world)")
	runs := flag.Int("runs", 3, "runs of each command")
	instances := flag.Int("instances", 10000, "instances in the fleet")
	flag.Parse()
	if *serve {
		if err := serveWorld(*instances, *dir); err != nil {
			fmt.Fprintln(os.Stderr, "diagbench world:", err)
			os.Exit(1)
		}
		return
	}
	if err := benchmark(*instances, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "diagbench:", err)
		os.Exit(1)
	}
}

// serveWorld starts the fleet, the CDN and the registry, announces the config on stdout and
// runs until stdin closes.
func serveWorld(n int, dir string) error {
	if err := bench.RaiseNoFile(); err != nil {
		return err
	}
	ctx := context.Background()
	reg := regtest.NewServer()
	defer reg.Close()
	good := testkit.CRABuild("store-web v2.31.0", 200, 30)
	bad := testkit.CRABuild("store-web v2.31.0 rebuilt", 200, 30)
	old := testkit.CRABuild("store-web v2.30.0", 200, 30)
	base := time.Date(2021, 4, 6, 9, 0, 0, 0, time.UTC)
	image := reg.Ref("store-web:v2.31.0")
	oldPushed, _, err := testkit.PublishAt(ctx, reg.Ref("store-web:v2.30.0"), old, base.Add(-7*24*time.Hour))
	if err != nil {
		return err
	}
	released, rec, err := testkit.PublishAt(ctx, image, good, base)
	if err != nil {
		return err
	}
	repushed, _, err := testkit.PublishAt(ctx, image, bad, base.Add(5*time.Hour))
	if err != nil {
		return err
	}
	cdn, err := testkit.StartCDN("/store/", good, old)
	if err != nil {
		return err
	}
	defer cdn.Close()
	specs := make([]testkit.Spec, n)
	for i := range specs {
		s := testkit.Spec{ID: fmt.Sprintf("web-%d", i+1), Build: good, Version: "v2.31.0", Digest: released.Digest}
		switch i % 20 {
		case 0:
			s.Build, s.Version, s.Digest = old, "v2.30.0", oldPushed.Digest
		case 1, 2, 3:
			s.Build, s.Digest = bad, repushed.Digest
		}
		specs[i] = s
	}
	fleet, err := testkit.StartFleet(specs, "/asset-manifest.json")
	if err != nil {
		return err
	}
	defer fleet.Close()
	recData, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "release.json"), recData, 0o644); err != nil {
		return err
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "release:\n  image: %q\n  manifest_file: %s\n  record: release.json\nfleet:\n  static:\n", image, testkit.ManifestFile)
	for _, in := range fleet.Instances {
		fmt.Fprintf(&cfg, "    - {id: %s, address: %q}\n", in.ID, in.Address)
	}
	fmt.Fprintf(&cfg, "probe:\n  host: %s\n  manifest:\n    path: %s\n  version:\n    header: X-App-Version\n  digest:\n    source: header\n    header: X-Image-Digest\n  concurrency: 128\n", bench.Host, fleet.ManifestPath)
	fmt.Fprintf(&cfg, "cdn:\n  base_urls:\n    - %s\n  concurrency: 32\n", cdn.URL)
	ready := bench.Ready{Config: filepath.Join(dir, "polygraph.yaml"), Host: bench.Host, ManifestPath: fleet.ManifestPath, CDN: cdn.URL, Builds: 3}
	if err := os.WriteFile(ready.Config, []byte(cfg.String()), 0o644); err != nil {
		return err
	}
	if err := json.NewEncoder(os.Stdout).Encode(ready); err != nil {
		return err
	}
	_, err = os.Stdin.Read(make([]byte, 1)) // until the parent closes the pipe
	return nil
}

type sample struct {
	wall, cpu time.Duration
	rss       int64
	note      string
}

func benchmark(n, runs int) error {
	if err := bench.RaiseNoFile(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "diagbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "polygraph")
	build := exec.Command("go", "build", "-o", bin, "./cmd/polygraph")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building polygraph: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	started := time.Now()
	world, err := bench.StartProcess(self, "-serve-world", "-dir", tmp, "-instances", strconv.Itoa(n))
	if err != nil {
		return err
	}
	defer world.Close()
	fmt.Printf("world: %d instances in 3 groups (80%% release, 15%% re-pushed rebuild, 5%% older release), registry and CDN; started in %v\n",
		n, time.Since(started).Round(time.Millisecond))
	data, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load average before: %s\n", strings.Fields(string(data) + " ?")[0])
	cache := filepath.Join(tmp, "cache")
	var vs, ds []sample
	for i := range runs {
		order := []string{"verify", "diagnose"}
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, c := range order {
			s, err := run(bin, c, world.Ready.Config, cache)
			if err != nil {
				return fmt.Errorf("run %d of %s: %w", i+1, c, err)
			}
			if c == "verify" {
				vs = append(vs, s)
			} else {
				ds = append(ds, s)
			}
			fmt.Printf("run %d %-8s %6.2fs wall %6.2fs CPU %6.1f MiB %s\n", i+1, c, s.wall.Seconds(), s.cpu.Seconds(), float64(s.rss)/(1<<20), s.note)
		}
	}
	vw, vc, vr := medians(vs)
	dw, dc, dr := medians(ds)
	fmt.Printf("\nmedian   verify %.2fs wall %.2fs CPU %.1f MiB; diagnose %.2fs wall %.2fs CPU %.1f MiB; diagnose/verify %.2fx wall %.2fx CPU %.2fx RSS\n",
		vw.Seconds(), vc.Seconds(), float64(vr)/(1<<20), dw.Seconds(), dc.Seconds(), float64(dr)/(1<<20),
		float64(dw)/float64(vw), float64(dc)/float64(vc), float64(dr)/float64(vr))
	return nil
}

// run runs one command with --output json and checks it found the three groups (exit 1).
func run(bin, command, config, cache string) (sample, error) {
	var out bytes.Buffer
	cmd := exec.Command(bin, command, "--config", config, "--output", "json", "--timeout", "5m")
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "XDG_CACHE_HOME="+cache)
	start := time.Now()
	err := cmd.Run()
	s := sample{wall: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.rss, s.cpu = ru.Maxrss*1024, time.Duration(ru.Utime.Nano()+ru.Stime.Nano())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		return s, fmt.Errorf("%s: %v (want exit 1: findings)", command, err)
	}
	var res struct {
		Groups []json.RawMessage `json:"groups"`
		Causes []struct {
			Kind string `json:"kind"`
		} `json:"causes"`
		Registry struct {
			Requests int `json:"requests"`
		} `json:"registry"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return s, fmt.Errorf("reading the %s output: %w", command, err)
	}
	if len(res.Groups) != 3 {
		return s, fmt.Errorf("%s found %d groups, want 3", command, len(res.Groups))
	}
	if command == "diagnose" {
		var kinds []string
		for _, c := range res.Causes {
			kinds = append(kinds, c.Kind)
		}
		if !slices.Contains(kinds, "tag-re-pushed") || !slices.Contains(kinds, "old-release") {
			return s, fmt.Errorf("diagnose found causes %v, want tag-re-pushed and old-release", kinds)
		}
		s.note = fmt.Sprintf("(%d registry requests; causes %s)", res.Registry.Requests, strings.Join(kinds, ", "))
	}
	return s, nil
}

func medians(ss []sample) (wall, cpu time.Duration, rss int64) {
	var w, c []time.Duration
	var r []int64
	for _, s := range ss {
		w, c, r = append(w, s.wall), append(c, s.cpu), append(r, s.rss)
	}
	slices.Sort(w)
	slices.Sort(c)
	slices.Sort(r)
	return w[len(w)/2], c[len(c)/2], r[len(r)/2]
}
