package running

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/model"
)

// engine is a fake Docker Engine API: one container "web" (label app=web) running image id.
type engine struct {
	mu    sync.Mutex
	paths []string
	id    string
	repo  []string
}

func (e *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.paths = append(e.paths, r.URL.Path)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v" + DockerAPIVersion + "/containers/json":
		if strings.Contains(r.URL.Query().Get("filters"), "app=web") {
			json.NewEncoder(w).Encode([]map[string]any{{"Id": "c0ffee", "Image": "web:v1"}})
			return
		}
		w.Write([]byte("[]"))
	case "/v" + DockerAPIVersion + "/containers/web/json", "/v" + DockerAPIVersion + "/containers/c0ffee/json":
		json.NewEncoder(w).Encode(map[string]any{"Id": "c0ffee", "Name": "/web", "Image": e.id})
	case "/v" + DockerAPIVersion + "/images/" + e.id + "/json":
		json.NewEncoder(w).Encode(map[string]any{"Id": e.id, "RepoDigests": e.repo})
	default:
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]string{"message": "No such container: " + r.URL.Path})
	}
}

// pki issues a CA, a server certificate for 127.0.0.1 and a client certificate.
func pki(t *testing.T) (server *tls.Config, clientCfg *tls.Config) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage, ips []net.IP) tls.Certificate {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"}, IPAddresses: ips,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	server = &tls.Config{Certificates: []tls.Certificate{issue(2, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	clientCfg = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{issue(3, x509.ExtKeyUsageClientAuth, nil)}}
	return server, clientCfg
}

func TestDockerEngineAPIWithClientCertificates(t *testing.T) {
	e := &engine{id: releaseID, repo: []string{"registry.example.com/web@" + releaseTop}}
	srv := httptest.NewUnstartedServer(e)
	serverTLS, clientTLS := pki(t)
	srv.TLS = serverTLS
	srv.StartTLS()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	targets := []model.Target{{ID: "web-1", Address: "127.0.0.1:8080"}, {ID: "web-2"}}

	for name, tc := range map[string]struct {
		container string
		tls       *tls.Config
		want      string // Unknown substring, "" for known
	}{
		"by name":            {"web", clientTLS, ""},
		"by label":           {"label=app=web", clientTLS, ""},
		"missing container":  {"api", clientTLS, "inspecting container api on web-1"},
		"no client cert":     {"web", &tls.Config{RootCAs: clientTLS.RootCAs}, "web-1"},
		"no container label": {"label=app=api", clientTLS, "no running container on web-1 has label app=api"},
	} {
		t.Run(name, func(t *testing.T) {
			src, err := NewDocker(tc.container, WithDockerHost("tcp://{host}:"+port), WithDockerTLS(tc.tls), WithDockerTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			got, err := src.RunningDigests(context.Background(), targets)
			if err != nil {
				t.Fatal(err)
			}
			r := got[0]
			if tc.want == "" {
				if r.Unknown != "" || r.ImageID != releaseID || len(r.RepoDigests) != 1 || r.RepoDigests[0] != "registry.example.com/web@"+releaseTop || r.Source != "docker" {
					t.Errorf("%+v", r)
				}
			} else if !strings.Contains(r.Unknown, tc.want) {
				t.Errorf("unknown = %q, want %q", r.Unknown, tc.want)
			}
			if !strings.Contains(got[1].Unknown, "web-2 has no address") {
				t.Errorf("target without address: %+v", got[1])
			}
		})
	}
	for _, p := range e.paths {
		if strings.Contains(p, "_ping") {
			t.Errorf("version negotiation request %s: the API version is fixed", p)
		}
	}
}

func TestDockerEngineAPIWithoutTLS(t *testing.T) {
	e := &engine{id: releaseID, repo: []string{"registry.example.com/web@" + releaseTop}}
	srv := httptest.NewServer(e)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	src, err := NewDocker("web", WithDockerHost("tcp://{host}:"+port))
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.RunningDigests(context.Background(), []model.Target{{ID: "web-1", Address: "127.0.0.1:8080"}})
	if err != nil || got[0].Unknown != "" || got[0].ImageID != releaseID {
		t.Fatalf("%+v, %v", got, err)
	}
}

func TestDockerHostTemplate(t *testing.T) {
	if _, err := NewDocker("web", WithDockerHost("unix:///var/run/docker.sock")); err == nil {
		t.Error("a unix socket host accepted: the Engine API is asked per instance over TCP")
	}
}

func TestDockerEngineAnswersAreBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v" + DockerAPIVersion + "/containers/web/json":
			w.Write([]byte(`{"Image": "sha256:` + strings.Repeat("a", 64) + `", "Config": {"Env": ["` + strings.Repeat("x", maxEngineAnswer) + `"]}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message": "No such image"}`))
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	src, err := NewDocker("web", WithDockerHost("tcp://{host}:"+port))
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.RunningDigests(context.Background(), []model.Target{{ID: "web-1", Address: "127.0.0.1:8080"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "over 4 MiB"; !strings.Contains(got[0].Unknown, want) || got[0].ImageID != "" {
		t.Errorf("unknown = %q, want it to say %q", got[0].Unknown, want)
	}
}

func TestDockerEngineErrorsCarryTheDaemonsMessage(t *testing.T) {
	srv := httptest.NewServer(&engine{id: releaseID})
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	src, err := NewDocker("api", WithDockerHost("tcp://{host}:"+port))
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.RunningDigests(context.Background(), []model.Target{{ID: "web-1", Address: "127.0.0.1:8080"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "No such container: /v" + DockerAPIVersion + "/containers/api/json (HTTP 404)"; !strings.Contains(got[0].Unknown, want) {
		t.Errorf("unknown = %q, want it to hold %q", got[0].Unknown, want)
	}
}
