// Package awsfake fakes AWS services at the wire-protocol level (EC2 and ELBv2 query/XML, SSM
// JSON 1.1) so tests drive the real SDK clients against 127.0.0.1. One Server answers every
// service, routed by the service name in the request's SigV4 credential scope, so all the
// AWS_ENDPOINT_URL_<SERVICE> variables point at one URL. Every call is recorded; faults
// answer AWS's real error codes. Each service lives in its own file.
package awsfake

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one request the fake received.
type Call struct {
	Service string     // signing name: "ec2", "elasticloadbalancing", "ssm"
	Action  string     // "DescribeInstances"
	Params  url.Values // query-protocol parameters (EC2, ELBv2)
	JSON    []byte     // JSON-protocol body (SSM)
}

// service is one faked AWS service.
type service interface {
	// action names the operation a request calls.
	action(r *http.Request, body []byte) string
	// serve answers one request; params holds the parsed form of query-protocol requests.
	serve(w http.ResponseWriter, action string, params url.Values, body []byte)
	// fail answers an AWS error in the service's protocol.
	fail(w http.ResponseWriter, status int, code, msg string)
}

// Server is one loopback HTTP server faking any number of AWS services.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	services map[string]service
	calls    []Call
	faults   map[string][]fault
	latency  time.Duration

	// EC2, ELBv2 and SSM are the services this server fakes.
	EC2   *EC2
	ELBv2 *ELBv2
	SSM   *SSM
}

type fault struct{ code, msg string }

// DefaultLatency is how long the fake waits before answering. Go 1.26 with smithy-go fails
// about one request in three with "use of closed network connection" against a loopback
// server that answers instantly; a few milliseconds of latency, like any real endpoint, keeps
// the client's connection handling on its ordinary path.
const DefaultLatency = 5 * time.Millisecond

// New starts a fake on 127.0.0.1 with EC2, ELBv2 and SSM.
func New() *Server {
	s := &Server{services: map[string]service{}, faults: map[string][]fault{}, latency: DefaultLatency}
	s.EC2 = &EC2{pageSize: 1000}
	s.ELBv2 = &ELBv2{ec2: s.EC2}
	s.SSM = newSSM()
	s.Register("ec2", s.EC2)
	s.Register("elasticloadbalancing", s.ELBv2)
	s.Register("ssm", s.SSM)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("awsfake: listening on 127.0.0.1: " + err.Error())
	}
	s.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: s}}
	s.srv.Start()
	return s
}

// Register adds a service under its SigV4 signing name.
func (s *Server) Register(signingName string, svc service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.services[signingName] = svc
}

// URL is the endpoint every AWS_ENDPOINT_URL_<SERVICE> should point at.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() {
	s.srv.Close()
	if s.SSM != nil {
		s.SSM.wait()
	}
}

// SetLatency sets how long every answer waits (DefaultLatency unless set).
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Env returns the environment that points the SDK at this fake with static credentials,
// a region and no instance metadata service. AWS_ENDPOINT_URL sends every service here, so a
// service added to the fake needs no variable of its own.
func (s *Server) Env(region string) []string {
	return []string{
		"AWS_ENDPOINT_URL=" + s.URL(),
		"AWS_ACCESS_KEY_ID=AKIAFAKE", "AWS_SECRET_ACCESS_KEY=fake", "AWS_SESSION_TOKEN=",
		"AWS_REGION=" + region, "AWS_EC2_METADATA_DISABLED=true", "AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_ENDPOINT_URL_EC2=" + s.URL(), "AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2=" + s.URL(),
		"AWS_ENDPOINT_URL_SSM=" + s.URL(),
	}
}

// Fail makes the next n calls of action answer the AWS error code (with msg).
func (s *Server) Fail(action, code, msg string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[action] = append(s.faults[action], fault{code, msg})
	}
}

// Calls returns the recorded calls of action ("" for every call), oldest first.
func (s *Server) Calls(action string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if action == "" || c.Action == action {
			out = append(out, c)
		}
	}
	return out
}

// Reset forgets the recorded calls.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// ServeHTTP routes a request to its service by the SigV4 credential scope.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name := signingName(r.Header.Get("Authorization"))
	s.mu.Lock()
	svc := s.services[name]
	latency := s.latency
	s.mu.Unlock()
	if svc == nil {
		http.Error(w, "awsfake: no service for signing name "+strings.TrimSpace(name), http.StatusBadRequest)
		return
	}
	var params url.Values
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		params, _ = url.ParseQuery(string(body))
	}
	action := svc.action(r, body)
	call := Call{Service: name, Action: action, Params: params}
	if params == nil {
		call.JSON = body
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	var f *fault
	if q := s.faults[action]; len(q) > 0 {
		f, s.faults[action] = &q[0], q[1:]
	}
	s.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency)
	}
	if f != nil {
		svc.fail(w, statusOf(f.code), f.code, f.msg)
		return
	}
	svc.serve(w, action, params, body)
}

// statusOf is the HTTP status AWS answers an error code with.
func statusOf(code string) int {
	switch code {
	case "UnauthorizedOperation", "AccessDenied", "AccessDeniedException":
		return http.StatusForbidden
	case "InternalError", "InternalFailure", "ServiceUnavailable":
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// signingName reads the service out of "AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/SERVICE/aws4_request, ...".
func signingName(auth string) string {
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[3]
}

// Setenv sets each KEY=VALUE of env (Env, or a world's) for the test, restored after it.
func Setenv(t testing.TB, env []string) {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}
