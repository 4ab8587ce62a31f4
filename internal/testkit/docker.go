package testkit

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Runtime is what an instance's container runtime says it runs, as the Docker Engine API
// reports it: the container's image ID (its config digest) and the image's repository
// digests. It is what a trusted digest source (probe.runtime docker) reads, apart from the
// digest the instance claims (Spec.Digest).
type Runtime struct {
	// Container is the container's name; the default is "web".
	Container   string
	ImageID     string
	RepoDigests []string
}

// docker answers the two Docker Engine API calls polygraph's docker source makes (inspect a
// container, inspect its image) on the instance's own listener, under any API version prefix,
// as a fleet discovered with one fleet.ec2.port and docker_host tcp://{host}:PORT would.
// It reports whether the request was one of them.
func (f *Fleet) docker(w http.ResponseWriter, r *http.Request, s Spec) bool {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/v1.") {
		return false
	}
	_, p, _ = strings.Cut(p[1:], "/")
	parts := strings.Split(p, "/")
	if len(parts) != 3 || parts[2] != "json" || (parts[0] != "containers" && parts[0] != "images") {
		return false
	}
	rt := s.Runtime
	name := "web"
	if rt != nil && rt.Container != "" {
		name = rt.Container
	}
	switch {
	case rt == nil || (parts[0] == "containers" && parts[1] != name):
		notFound(w, "No such container: "+parts[1])
	case parts[0] == "containers":
		writeJSON(w, map[string]any{"Id": "c0ffee" + name, "Name": "/" + name, "Image": rt.ImageID, "State": map[string]any{"Running": true}})
	case parts[1] == rt.ImageID:
		writeJSON(w, map[string]any{"Id": rt.ImageID, "RepoDigests": rt.RepoDigests})
	default:
		notFound(w, "No such image: "+parts[1])
	}
	return true
}

// notFound answers 404 with the Engine API's error body.
func notFound(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
