package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
)

// Workload describes the simulated fleet of the benchmark.
type Workload struct {
	// Instances is the fleet's size, one loopback address each.
	Instances int
	// Entries is the number of files in each create-react-app manifest; Pad lengthens their
	// names (200 entries with pad 30 make a manifest of about 25 KB).
	Entries, Pad int
	// Builds is the number of distinct builds; every OtherEvery-th instance serves one of the
	// Builds-1 other builds, the rest serve the main build.
	Builds, OtherEvery int
	// Latency is added to every instance answer.
	Latency time.Duration
	// MissingEvery removes every MissingEvery-th unique asset from the CDN (50: 2%).
	MissingEvery int
	// ProbeConcurrency and CDNConcurrency are written into the config.
	ProbeConcurrency, CDNConcurrency int
}

// DefaultWorkload is the fleet benchmark's workload: 10,000 instances serving 25 KB
// manifests with 200 entries, 10% of them on 199 other builds (40,000 unique assets), 20 ms
// of latency, and a CDN missing 2% of the assets.
func DefaultWorkload() Workload {
	return Workload{
		Instances: 10000, Entries: 200, Pad: 30, Builds: 200, OtherEvery: 10,
		Latency: 20 * time.Millisecond, MissingEvery: 50, ProbeConcurrency: 128, CDNConcurrency: 32,
	}
}

// Ready is what a started world announces: where its config is and what a correct run finds.
type Ready struct {
	// Config is the polygraph.yaml; Targets lists the instance addresses, one a line.
	Config  string `json:"config"`
	Targets string `json:"targets"`
	// Host, ManifestPath and CDN are what the hand-written fetcher needs.
	Host         string `json:"host"`
	ManifestPath string `json:"manifest_path"`
	CDN          string `json:"cdn"`
	// ManifestBytes is the size of the main build's manifest.
	ManifestBytes int `json:"manifest_bytes"`
	// UniqueAssets and Missing are what a correct run must find.
	UniqueAssets int `json:"unique_assets"`
	Missing      int `json:"missing"`
	// Builds is the number of distinct builds the fleet serves.
	Builds int `json:"builds"`
}

// Host is the site name sent in the Host header.
const Host = "store.example.com"

// World is a running benchmark world.
type World struct {
	Fleet *testkit.Fleet
	CDN   *testkit.CDN
	Ready Ready
}

// Close stops the fleet and the CDN.
func (w *World) Close() {
	w.Fleet.Close()
	w.CDN.Close()
}

// StartWorld starts the workload's fleet and CDN in this process and writes polygraph.yaml and
// targets.txt into dir.
func StartWorld(wl Workload, dir string) (*World, error) {
	if wl.Builds < 1 || wl.OtherEvery < 1 || wl.Instances < 1 {
		return nil, errors.New("a workload needs at least one instance and one build")
	}
	builds := make([]*testkit.Build, wl.Builds)
	for i := range builds {
		builds[i] = testkit.CRABuild(fmt.Sprintf("store-web build %d", i), wl.Entries, wl.Pad)
	}
	specs := make([]testkit.Spec, wl.Instances)
	used := map[int]bool{}
	for i := range specs {
		b := 0
		if wl.Builds > 1 && i%wl.OtherEvery == wl.OtherEvery-1 {
			b = 1 + (i/wl.OtherEvery)%(wl.Builds-1)
		}
		used[b] = true
		specs[i] = testkit.Spec{ID: fmt.Sprintf("web-%d", i+1), Build: builds[b], Version: "v2.31.0", Latency: wl.Latency}
	}
	var assets []string
	seen := map[string]bool{}
	for b := range used {
		for _, a := range builds[b].Assets {
			if !seen[a] {
				seen[a] = true
				assets = append(assets, a)
			}
		}
	}
	sort.Strings(assets)
	cdn, err := testkit.StartCDN("/store/", builds...)
	if err != nil {
		return nil, fmt.Errorf("starting the CDN: %w", err)
	}
	missing := 0
	if wl.MissingEvery > 0 {
		for i := wl.MissingEvery - 1; i < len(assets); i += wl.MissingEvery {
			cdn.Remove(assets[i])
			missing++
		}
	}
	fleet, err := testkit.StartFleet(specs, "/asset-manifest.json")
	if err != nil {
		cdn.Close()
		return nil, fmt.Errorf("starting the fleet: %w", err)
	}
	w := &World{Fleet: fleet, CDN: cdn, Ready: Ready{
		Config: filepath.Join(dir, "polygraph.yaml"), Targets: filepath.Join(dir, "targets.txt"),
		Host: Host, ManifestPath: fleet.ManifestPath, CDN: cdn.URL, ManifestBytes: len(builds[0].Manifest),
		UniqueAssets: len(assets), Missing: missing, Builds: len(used),
	}}
	if err := w.write(wl); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// write writes the config (consensus: no release record) and the target list.
func (w *World) write(wl Workload) error {
	var cfg, targets strings.Builder
	cfg.WriteString("# Written by bench: the fleet benchmark's simulated world.\nrelease:\n  version: v2.31.0\nfleet:\n  static:\n")
	for _, in := range w.Fleet.Instances {
		fmt.Fprintf(&cfg, "    - {id: %s, address: %q}\n", in.ID, in.Address)
		fmt.Fprintln(&targets, in.Address)
	}
	fmt.Fprintf(&cfg, "probe:\n  host: %s\n  manifest:\n    path: %s\n  version:\n    header: X-App-Version\n  concurrency: %d\n",
		Host, w.Fleet.ManifestPath, wl.ProbeConcurrency)
	fmt.Fprintf(&cfg, "cdn:\n  base_urls:\n    - %s\n  concurrency: %d\n", w.CDN.URL, wl.CDNConcurrency)
	if err := os.WriteFile(w.Ready.Config, []byte(cfg.String()), 0o644); err != nil {
		return fmt.Errorf("writing the config: %w", err)
	}
	if err := os.WriteFile(w.Ready.Targets, []byte(targets.String()), 0o644); err != nil {
		return fmt.Errorf("writing the targets: %w", err)
	}
	return nil
}

// RaiseNoFile raises the soft limit of open files to the hard limit: 10,000 listeners, or
// 10,000 connections, need more than the usual 1,024.
func RaiseNoFile() error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("reading RLIMIT_NOFILE: %w", err)
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return fmt.Errorf("raising RLIMIT_NOFILE to %d: %w", l.Max, err)
		}
	}
	return nil
}

// Serve starts the world, announces it as one JSON line on out, and keeps it running until in
// reaches EOF (the parent closed the pipe or exited).
func Serve(wl Workload, dir string, in io.Reader, out io.Writer) error {
	if err := RaiseNoFile(); err != nil {
		return err
	}
	w, err := StartWorld(wl, dir)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := json.NewEncoder(out).Encode(w.Ready); err != nil {
		return fmt.Errorf("announcing the world: %w", err)
	}
	_, err = io.Copy(io.Discard, in)
	return err
}

// Process is a world running in a child process.
type Process struct {
	Ready Ready
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// StartProcess runs a command that calls Serve (fleetbench -serve-world) and waits for it to
// announce its world.
func StartProcess(name string, args ...string) (*Process, error) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("waiting for the world to start: %w", err)
	}
	if err := json.Unmarshal(line, &p.Ready); err != nil {
		p.Close()
		return nil, fmt.Errorf("reading the world's announcement %q: %w", line, err)
	}
	return p, nil
}

// Close stops the world's process and waits for it.
func (p *Process) Close() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		return <-done
	}
}
