package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph-dev/polygraph/internal/testkit"
	"github.com/polygraph-dev/polygraph/model"
)

// writePKI writes ca.pem, a server certificate for ips (server.pem, server-key.pem) and a
// client certificate (cert.pem, key.pem) into dir.
func writePKI(t *testing.T, dir string, ips []net.IP) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caKey := newKey()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "docker CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, _ := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	ca, _ = x509.ParseCertificate(caDER)
	write("ca.pem", "CERTIFICATE", caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage, ips []net.IP, certFile, keyFile string) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: certFile}, IPAddresses: ips,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		write(certFile, "CERTIFICATE", der)
		kder, _ := x509.MarshalECPrivateKey(k)
		write(keyFile, "EC PRIVATE KEY", kder)
	}
	issue(2, x509.ExtKeyUsageServerAuth, ips, "server.pem", "server-key.pem")
	issue(3, x509.ExtKeyUsageClientAuth, nil, "cert.pem", "key.pem")
}

// dockerEngine fakes the two Engine API endpoints polygraph reads, for one container "web".
func dockerEngine(imageID string, repoDigests []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/containers/web/json"):
			json.NewEncoder(w).Encode(map[string]any{"Id": "c0ffee", "Name": "/web", "Image": imageID})
		case strings.HasSuffix(r.URL.Path, "/images/"+imageID+"/json"):
			json.NewEncoder(w).Encode(map[string]any{"Id": imageID, "RepoDigests": repoDigests})
		default:
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]string{"message": "No such object: " + r.URL.Path})
		}
	})
}

func TestVerifyWithDockerRunningDigests(t *testing.T) {
	w, err := testkit.StartIncident(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	w.Fleet.Close()
	var specs []testkit.Spec
	for i := 1; i <= 3; i++ {
		specs = append(specs, testkit.Spec{ID: fmt.Sprintf("web-%d", i), Build: w.Good, Version: w.Version, Digest: w.Released.Digest})
	}
	if w.Fleet, err = testkit.StartFleetWith(specs, testkit.FleetOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var ips []net.IP
	for _, in := range w.Fleet.Instances {
		host, _, _ := net.SplitHostPort(in.Address)
		ips = append(ips, net.ParseIP(host))
	}
	writePKI(t, dir, ips)
	serverCert, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	serverTLS := &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}

	// One engine per instance address, all on one port (the docker_host template has one).
	repo := strings.Split(w.Image, ":v")[0]
	var port int
	for attempt := 0; attempt < 20 && port == 0; attempt++ {
		var lns []net.Listener
		p := 0
		for _, ip := range ips {
			ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), fmt.Sprint(p)))
			if err != nil {
				break
			}
			p = ln.Addr().(*net.TCPAddr).Port
			lns = append(lns, ln)
		}
		if len(lns) < len(ips) {
			for _, ln := range lns {
				ln.Close()
			}
			continue
		}
		port = p
		for i, ln := range lns {
			id, top := w.Released.Images[0].Config, w.Released.Digest
			if i == 1 {
				id, top = w.Repushed.Images[0].Config, w.Repushed.Digest
			}
			srv := &http.Server{Handler: dockerEngine(id, []string{repo + "@" + top}), ReadHeaderTimeout: 5 * time.Second}
			go srv.Serve(tls.NewListener(ln, serverTLS))
			t.Cleanup(func() { srv.Close() })
		}
	}
	if port == 0 {
		t.Fatal("could not bind one port on every instance address")
	}
	data, _ := json.Marshal(w.Record)
	os.WriteFile(filepath.Join(dir, "release.json"), data, 0o644)
	var fleetYAML strings.Builder
	for _, in := range w.Fleet.Instances {
		fmt.Fprintf(&fleetYAML, "    - {id: %s, address: %q}\n", in.ID, in.Address)
	}
	cfg := fmt.Sprintf(`release:
  image: %q
  version: %s
  record: release.json
fleet:
  static:
%sprobe:
  host: store.example.com
  version:
    header: X-App-Version
  runtime:
    source: docker
    container: web
    docker_host: tcp://{host}:%d
    tls: {ca_file: ca.pem, cert_file: cert.pem, key_file: key.pem}
  timeout: 2s
  retries: 1
cdn:
  base_urls:
    - %s
`, repo+"@"+w.Released.Digest, w.Version, fleetYAML.String(), port, w.CDN.URL)
	path := filepath.Join(dir, "polygraph.yaml")
	os.WriteFile(path, []byte(cfg), 0o644)

	stdout, stderr, code := polygraph(t, nil, "verify", "--config", path, "--output", "json", "--timeout", "30s")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s\n%s", code, stderr, stdout)
	}
	var rep model.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	want := []string{"digest-mismatch web-2", "version-lie web-2"}
	if got := findingsOf(&rep); !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	for _, in := range rep.Instances {
		want := w.Released.Digest
		if in.ID == "web-2" {
			want = w.Repushed.Digest
		}
		if in.RunningDigest != want {
			t.Errorf("%s running_digest %s, want %s", in.ID, in.RunningDigest, want)
		}
	}
}
