package testkit

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"
)

// EngineImage is what a fake Docker Engine reports its container "web" runs.
type EngineImage struct {
	ID          string   // config digest, sha256:...
	RepoDigests []string // repo@sha256:...
}

// Engines are fake Docker Engine APIs (plain HTTP), one on each fleet instance's address, all
// on one port: the docker running-digest source asks them at tcp://{host}:Port.
type Engines struct {
	Port    int
	servers []*http.Server
}

// StartEngines starts an engine beside every instance of f, reporting image(in).
func StartEngines(f *Fleet, image func(in *Instance) EngineImage) (*Engines, error) {
	for attempt := 0; attempt < 20; attempt++ {
		var lns []net.Listener
		port := 0
		for _, in := range f.Instances {
			host, _, _ := net.SplitHostPort(in.Address)
			ln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
			if err != nil {
				break
			}
			port = ln.Addr().(*net.TCPAddr).Port
			lns = append(lns, ln)
		}
		if len(lns) < len(f.Instances) { // the port is taken on some address: try another
			for _, ln := range lns {
				ln.Close()
			}
			continue
		}
		e := &Engines{Port: port}
		for i, ln := range lns {
			srv := &http.Server{Handler: engineHandler(image(f.Instances[i])), ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
			e.servers = append(e.servers, srv)
			go srv.Serve(ln)
		}
		return e, nil
	}
	return nil, fmt.Errorf("no port free on every instance address for the fake Docker engines")
}

// Close stops the engines.
func (e *Engines) Close() {
	for _, s := range e.servers {
		s.Close()
	}
}

// engineHandler answers GET /containers/web/json and GET /images/{id}/json as the Docker
// Engine API does.
func engineHandler(im EngineImage) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/containers/web/json"):
			json.NewEncoder(w).Encode(map[string]any{"Id": "c0ffee", "Name": "/web", "Image": im.ID})
		case strings.HasSuffix(r.URL.Path, "/images/"+im.ID+"/json"):
			json.NewEncoder(w).Encode(map[string]any{"Id": im.ID, "RepoDigests": im.RepoDigests})
		default:
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]string{"message": "No such object: " + r.URL.Path})
		}
	})
}
