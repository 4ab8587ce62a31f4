package diagnose

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
	"github.com/polygraph-dev/polygraph/report"
)

var screenshot = flag.String("screenshot", "", "also write the browser test's screenshot of the demo incident to this file (docs/diagnose.png)")

// chromium returns the path of a Chromium or Chrome binary, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("POLYGRAPH_REQUIRE_BROWSER") != "" {
		t.Fatal("no Chromium installed, and POLYGRAPH_REQUIRE_BROWSER is set (CI installs it: apt-get install chromium)")
	}
	t.Skip("no Chromium installed (apt-get install chromium): the HTML diagnosis was not checked in a browser")
	return ""
}

// browsed is what the browser saw of a page.
type browsed struct {
	text     string // the visible text (innerText)
	cells    int    // elements of the fleet picture
	marks    int    // elements of the launch timeline
	requests []string
	png      []byte
}

// browse loads page in headless Chromium from a loopback server and records every request the
// page makes. The browser is told to resolve no host name and to send anything not on
// loopback to a closed loopback proxy, so even a broken page cannot reach the network.
func browse(t *testing.T, page []byte, width, height int) browsed {
	t.Helper()
	exe := chromium(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	}))
	defer srv.Close()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(width, height),
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	var mu sync.Mutex
	var got browsed
	if err := chromedp.Listen(bctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			got.requests = append(got.requests, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	var err error
	if got.text, err = chromedp.Run(bctx, chromedp.Evaluate[string]("document.body.innerText")); err != nil {
		t.Fatal(err)
	}
	if got.cells, err = chromedp.Run(bctx, chromedp.Evaluate[int]("document.querySelectorAll('#fleet-picture rect.cell, #fleet-picture rect.cells').length")); err != nil {
		t.Fatal(err)
	}
	if got.marks, err = chromedp.Run(bctx, chromedp.Evaluate[int]("document.querySelectorAll('#launch-timeline circle, #launch-timeline rect, #launch-timeline path').length")); err != nil {
		t.Fatal(err)
	}
	if got.png, err = chromedp.Run(bctx, chromedp.CaptureScreenshot()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let late requests (a lazy image, a font) show
	mu.Lock()
	defer mu.Unlock()
	return got
}

func noRequestsBut(t *testing.T, got browsed, page string) {
	t.Helper()
	for _, u := range got.requests {
		if u != page {
			t.Errorf("the page made a request: %s", u)
		}
	}
}

// The demo incident's diagnosis, as a browser shows it.
func TestHTMLInBrowser(t *testing.T) {
	exe := chromium(t)
	s := startScenario(t, func(w *testkit.World, _ *testkit.Fleet) []model.Target { return w.Fleet.Targets() })
	d := s.diagnose(t)
	var page bytes.Buffer
	if err := report.RenderDiagnosisHTML(&page, d); err != nil {
		t.Fatal(err)
	}
	got := browse(t, page.Bytes(), 1100, 1420)
	t.Logf("browser %s: %d requests, %d fleet cells, %d timeline marks", exe, len(got.requests), got.cells, got.marks)
	if len(got.requests) != 1 {
		t.Errorf("requests %v, want only the page itself", got.requests)
	}
	noRequestsBut(t, got, got.requests[0])
	for _, want := range []string{
		"FAIL", "What is wrong", "2 of 6 instances serve other content than the release",
		"Group 1", "Group 2", "release recorded 2021-04-06 08:50 UTC", "tag-re-pushed",
		"The tag v2.31.0 was re-pushed", "web-5, web-6", "Findings (31)",
	} {
		if !strings.Contains(got.text, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if got.cells != 6 || got.marks < 6 {
		t.Errorf("fleet cells %d (want 6), timeline marks %d", got.cells, got.marks)
	}
	saveScreenshot(t, got.png, "diagnose-incident.png")
	if *screenshot != "" {
		if err := os.WriteFile(*screenshot, got.png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A 10,000-instance fleet in three groups: the page stays small, the picture is bounded in
// elements, and the browser draws it.
func TestHTMLLargeFleetInBrowser(t *testing.T) {
	d := largeDiagnosis(10000)
	var page bytes.Buffer
	if err := report.RenderDiagnosisHTML(&page, d); err != nil {
		t.Fatal(err)
	}
	if page.Len() > 1<<20 {
		t.Errorf("the page is %d bytes for 10,000 instances", page.Len())
	}
	got := browse(t, page.Bytes(), 1100, 1000)
	if len(got.requests) != 1 {
		t.Errorf("requests %v, want only the page itself", got.requests)
	}
	if got.cells > 500 || got.cells == 0 {
		t.Errorf("fleet picture has %d elements for 10,000 instances", got.cells)
	}
	for _, want := range []string{"Group 1 · 7000 instances", "Group 3 · 1000 instances", "Unreachable · 500 instances", "old-release"} {
		if !strings.Contains(got.text, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	saveScreenshot(t, got.png, "diagnose-10000.png")
}

func saveScreenshot(t *testing.T, png []byte, name string) {
	t.Helper()
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// largeDiagnosis builds a diagnosis of n instances: 70% on the release, 15% on a re-pushed
// rebuild launched later, 10% on an older release, 5% unreachable.
func largeDiagnosis(n int) *model.Diagnosis {
	rec := base.Add(-10 * time.Minute)
	rep := &model.Report{Schema: model.ReportSchema, Verdict: model.VerdictFail, StartedAt: base.Add(8 * time.Hour),
		Release: model.Release{Image: "registry.example.com/store-web:v2.31.0", Digest: "sha256:" + strings.Repeat("a", 64)}}
	sizes := []int{n * 70 / 100, n * 15 / 100, n * 10 / 100}
	d := &model.Diagnosis{Schema: model.DiagnosisSchema, Verdict: model.VerdictFail, Report: rep, RecordedAt: &rec}
	k := 0
	for gi, size := range sizes {
		g := model.DiagnosisGroup{ID: gi + 1, MatchesRelease: gi == 0, ClaimedVersions: []string{"v2.31.0"}, Labels: map[string][]string{"az": {"us-east-1a", "us-east-1b"}}}
		for range size {
			k++
			id := fmt.Sprintf("i-%017x", k)
			at := base.Add(time.Duration(k) * time.Second)
			if gi == 1 {
				at = at.Add(6 * time.Hour)
			}
			if gi == 2 {
				at = at.Add(-7 * 24 * time.Hour)
			}
			g.Instances = append(g.Instances, id)
			rep.Instances = append(rep.Instances, model.Instance{ID: id, LaunchedAt: &at, Status: model.StatusOK, Group: g.ID})
		}
		first, last := *rep.Instances[k-size].LaunchedAt, *rep.Instances[k-1].LaunchedAt
		g.LaunchedFirst, g.LaunchedLast = &first, &last
		d.Groups = append(d.Groups, g)
	}
	for k < n {
		k++
		id := fmt.Sprintf("i-%017x", k)
		d.Unreachable = append(d.Unreachable, id)
		rep.Instances = append(rep.Instances, model.Instance{ID: id, Status: model.StatusUnreachable})
	}
	d.Causes = []model.Cause{
		{Kind: model.CauseTagRePushed, Summary: "The tag was re-pushed.", Groups: []int{2}, Evidence: []string{"e"}, Actions: []string{"a"}},
		{Kind: model.CauseOldRelease, Summary: "Some still run v2.30.0.", Groups: []int{3}, Evidence: []string{"e"}, Actions: []string{"a"}},
	}
	return d
}
