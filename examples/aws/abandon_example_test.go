package aws_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/polygraph-dev/polygraph/config"
	"github.com/polygraph-dev/polygraph/hook"
	"github.com/polygraph-dev/polygraph/internal/awsconf"
	"github.com/polygraph-dev/polygraph/internal/run"
	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/probe"
	"github.com/polygraph-dev/polygraph/registry"
)

// A group scales out twice. The first instance serves the release; the second was launched
// after the tag was re-pushed with a rebuild whose assets never reached the CDN. The hook
// lets the first into service and ABANDONs the second, so Auto Scaling terminates it and
// launches another instead of sending users broken pages.
func Example_abandonABadLaunch() {
	ctx := context.Background()
	w, err := testkit.StartLaunchWorld(ctx, []testkit.Spec{{ID: "i-0good"}, {ID: "i-0repushed"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	w.Fleet.Instance("i-0repushed").Set(func(s *testkit.Spec) { s.Build = w.Bad })
	for _, kv := range w.Env() { // the AWS SDK talks to local fakes of EC2 and Auto Scaling
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	dir, _ := os.MkdirTemp("", "polygraph-example-")
	defer os.RemoveAll(dir)
	path, _ := w.WriteConfig(dir, "heartbeat_interval: 10s")
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	ac, _ := awsconf.Load(ctx, cfg.Fleet.EC2.Region)
	launches, err := run.NewLaunchesFromAWS(cfg, ac, run.Options{
		Probe:    []probe.Option{probe.WithDialer(testkit.LoopbackDial)},
		Registry: []registry.Option{registry.WithTransport(testkit.LoopbackTransport()), registry.WithCacheDir("")},
	}, run.LaunchOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := hook.NewFromAWS(cfg, ac, launches.Verify)
	for _, id := range []string{"i-0good", "i-0repushed"} {
		ev, _ := hook.Decode([]byte(w.Launch(id, "token-"+id, 5*time.Minute)))
		out, err := h.Handle(ctx, ev)
		if err != nil {
			fmt.Println(err)
			return
		}
		var kinds []string
		for _, f := range out.Report.Findings {
			if !slices.Contains(kinds, string(f.Kind)) {
				kinds = append(kinds, string(f.Kind))
			}
		}
		if len(kinds) == 0 {
			kinds = []string{"none"}
		}
		act, _ := w.AWS.AutoScaling().Action("token-" + id)
		fmt.Printf("%s: %s (exit %d), Auto Scaling saw %s; findings: %s\n", id, out.Decision, out.ExitCode, act.Result, strings.Join(kinds, ", "))
	}
	// Output:
	// i-0good: CONTINUE (exit 0), Auto Scaling saw CONTINUE; findings: none
	// i-0repushed: ABANDON (exit 1), Auto Scaling saw ABANDON; findings: version-lie, content-mismatch, asset-missing
}
