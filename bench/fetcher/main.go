// Command fetcher is the fleet benchmark's yardstick (see package fetch): it prints what it
// found as one JSON line.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/polygraph-dev/polygraph/bench/fetch"
)

func main() {
	var c fetch.Config
	targets := flag.String("targets", "", "file of instance addresses, one a line")
	flag.StringVar(&c.Host, "host", "", "Host header sent to instances")
	flag.StringVar(&c.ManifestPath, "path", "/asset-manifest.json", "manifest URL path")
	flag.StringVar(&c.CDN, "cdn", "", "CDN base URL")
	flag.IntVar(&c.Concurrency, "concurrency", 128, "instances fetched at once")
	flag.IntVar(&c.CDNConcurrency, "cdn-concurrency", 32, "CDN requests at once")
	flag.DurationVar(&c.Timeout, "timeout", 5*time.Second, "per request")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to `file`")
	flag.Parse()
	// 128 connections at a time fit in 1,024 files, but the benchmark asks every process to
	// raise its soft limit to the hard one.
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
	data, err := os.ReadFile(*targets)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fetcher:", err)
		os.Exit(2)
	}
	c.Targets = strings.Fields(string(data))
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fetcher:", err)
			os.Exit(2)
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	res := fetch.Run(context.Background(), c)
	json.NewEncoder(os.Stdout).Encode(res)
}
