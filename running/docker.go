package running

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// DockerOption tunes the Docker source.
type DockerOption func(*dockerOptions)

type dockerOptions struct {
	host        string
	tls         *tls.Config
	concurrency int
	timeout     time.Duration
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	logger      *slog.Logger
}

// DefaultDockerHost is the Docker Engine address template; {host} is the instance's address
// host.
const DefaultDockerHost = "tcp://{host}:2376"

// DockerAPIVersion is the Engine API version asked for (Docker 19.03 and later serve it). A
// fixed version spares one version-negotiation request per instance.
const DockerAPIVersion = "1.40"

// WithDockerHost sets the Engine address template. The default is DefaultDockerHost.
func WithDockerHost(template string) DockerOption {
	return func(o *dockerOptions) { o.host = template }
}

// WithDockerTLS sets the TLS configuration (CA and client certificate) for the Engine API.
// The default is plain HTTP, for a daemon listening without TLS.
func WithDockerTLS(c *tls.Config) DockerOption { return func(o *dockerOptions) { o.tls = c } }

// WithDockerConcurrency sets how many instances are asked at once. The default is 16.
func WithDockerConcurrency(n int) DockerOption { return func(o *dockerOptions) { o.concurrency = n } }

// WithDockerTimeout bounds the requests to one instance. The default is 10s.
func WithDockerTimeout(d time.Duration) DockerOption { return func(o *dockerOptions) { o.timeout = d } }

// WithDockerDialer sets the dialer of Engine API connections. The default is net.Dialer.
func WithDockerDialer(d func(ctx context.Context, network, addr string) (net.Conn, error)) DockerOption {
	return func(o *dockerOptions) { o.dial = d }
}

// WithDockerLogger sets the logger. The default discards.
func WithDockerLogger(l *slog.Logger) DockerOption { return func(o *dockerOptions) { o.logger = l } }

// Docker reads running digests from each instance's Docker Engine API:
// GET /containers/{name}/json, then GET /images/{id}/json.
type Docker struct {
	container string
	o         dockerOptions
}

// NewDocker returns the Docker source asking about container (a name, an ID or
// "label=KEY=VALUE").
func NewDocker(container string, opts ...DockerOption) (*Docker, error) {
	o := dockerOptions{host: DefaultDockerHost, concurrency: 16, timeout: 10 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.dial == nil {
		o.dial = (&net.Dialer{Timeout: o.timeout}).DialContext
	}
	if !ValidContainer(container) {
		return nil, fmt.Errorf("container %q must be a name, an ID or label=KEY=VALUE", container)
	}
	if !strings.HasPrefix(o.host, "tcp://") || !strings.Contains(o.host, "{host}") {
		return nil, fmt.Errorf("docker_host %q must be tcp://{host}:PORT", o.host)
	}
	if o.concurrency < 1 {
		o.concurrency = 1
	}
	return &Docker{container: container, o: o}, nil
}

// Name returns "docker".
func (*Docker) Name() string { return "docker" }

// RunningDigests asks every target's Engine API, a bounded number at once.
func (d *Docker) RunningDigests(ctx context.Context, targets []model.Target) ([]model.RunningDigest, error) {
	res := make([]model.RunningDigest, len(targets))
	sem := make(chan struct{}, d.o.concurrency)
	var wg sync.WaitGroup
	for i, t := range targets {
		res[i] = model.RunningDigest{TargetID: t.ID, Source: "docker"}
		host, _, err := net.SplitHostPort(t.Address)
		if t.Address == "" || err != nil {
			res[i].Unknown = fmt.Sprintf("%s has no address to reach its Docker Engine API at", t.ID)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			res[i].Unknown = fmt.Sprintf("the Docker Engine API of %s was not asked: %v", t.ID, ctx.Err())
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res[i] = d.ask(ctx, t.ID, host)
		}()
	}
	wg.Wait()
	share(res)
	return res, nil
}

// ask reads one instance's container and image.
func (d *Docker) ask(ctx context.Context, id, host string) model.RunningDigest {
	r := model.RunningDigest{TargetID: id, Source: "docker"}
	endpoint := strings.ReplaceAll(d.o.host, "{host}", hostForURL(host))
	// The scheme follows the configuration, never a guess: TLS (with client certificates)
	// when probe.runtime.tls is given, plain HTTP otherwise.
	base := d.scheme() + "://" + strings.TrimPrefix(endpoint, "tcp://") + "/v" + DockerAPIVersion
	tr := &http.Transport{TLSClientConfig: d.o.tls, DialContext: d.o.dial, MaxIdleConns: 1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	e := engineAPI{client: &http.Client{Transport: tr}, base: base}
	ctx, cancel := context.WithTimeout(ctx, d.o.timeout)
	defer cancel()
	name := d.container
	if sel, ok := strings.CutPrefix(name, "label="); ok {
		filters, _ := json.Marshal(map[string][]string{"label": {sel}})
		var list []struct {
			ID string `json:"Id"`
		}
		if err := e.get(ctx, "/containers/json?filters="+url.QueryEscape(string(filters)), &list); err != nil {
			r.Unknown = fmt.Sprintf("listing containers of %s at %s: %v", id, endpoint, err)
			return r
		}
		if len(list) == 0 {
			r.Unknown = fmt.Sprintf("no running container on %s has label %s", id, sel)
			return r
		}
		name = list[0].ID
	}
	var ci struct{ Image string }
	if err := e.get(ctx, "/containers/"+url.PathEscape(name)+"/json", &ci); err != nil {
		r.Unknown = fmt.Sprintf("inspecting container %s on %s at %s: %v", name, id, endpoint, err)
		return r
	}
	var im struct {
		ID          string `json:"Id"`
		RepoDigests []string
	}
	if err := e.get(ctx, "/images/"+url.PathEscape(ci.Image)+"/json", &im); err != nil {
		r.Unknown = fmt.Sprintf("inspecting image %s on %s at %s: %v", ci.Image, id, endpoint, err)
		return r
	}
	r.ImageID = canonical(im.ID)
	for _, rd := range im.RepoDigests {
		if i := strings.LastIndex(rd, "@"); i > 0 && canonical(rd[i+1:]) != "" {
			r.RepoDigests = append(r.RepoDigests, rd[:i]+"@"+canonical(rd[i+1:]))
		}
	}
	if r.ImageID == "" && len(r.RepoDigests) == 0 {
		r.Unknown = fmt.Sprintf("the Docker Engine API of %s gave no image digest for container %s", id, name)
	}
	return r
}

// maxEngineAnswer caps what is read of one Engine API answer. An inspected container with
// many mounts, labels and environment variables is tens of kilobytes.
const maxEngineAnswer = 4 << 20

// engineAPI makes the three GETs of the Docker Engine API the source needs, with net/http and
// the few answer fields it reads, rather than through the moby client: that client (with its
// OpenTelemetry instrumentation and image reference parsing) cost 1.5 MB of executable and
// about 1 MiB of resident memory at every start, polygraph's or not, and reads answers
// without a size limit.
type engineAPI struct {
	client *http.Client
	base   string // scheme://host:port/vVERSION
}

// get decodes the JSON answer to GET path into v. An answer other than 200 is an error with
// the daemon's message ("No such container: api").
func (e engineAPI) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxEngineAnswer+1))
	if err != nil {
		return fmt.Errorf("reading the answer to GET %s: %w", path, err)
	}
	if len(body) > maxEngineAnswer {
		return fmt.Errorf("the answer to GET %s is over %d MiB", path, maxEngineAnswer>>20)
	}
	if resp.StatusCode != http.StatusOK {
		var msg struct{ Message string }
		if json.Unmarshal(body, &msg) == nil && msg.Message != "" {
			return fmt.Errorf("GET %s: %s (HTTP %d)", path, msg.Message, resp.StatusCode)
		}
		return fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decoding the answer to GET %s: %w", path, err)
	}
	return nil
}

func (d *Docker) scheme() string {
	if d.o.tls != nil {
		return "https"
	}
	return "http"
}

// hostForURL brackets an IPv6 literal.
func hostForURL(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}
