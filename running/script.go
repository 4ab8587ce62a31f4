package running

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/polygraph-dev/polygraph/model"
)

// Engines are the container runtimes the SSM script can ask.
var Engines = []string{"docker", "containerd", "podman", "nerdctl"}

// containerName is what a container name or label selector may look like; it is quoted into
// the script, so nothing a shell would interpret is accepted.
var containerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/=-]*$`)

// ValidContainer reports whether c can name a container in the script: a name, an ID, or a
// label selector "label=KEY=VALUE", with no character a shell would interpret.
func ValidContainer(c string) bool { return len(c) <= 256 && containerName.MatchString(c) }

// Script returns the shell script SSM runs on each instance. It only reads (inspect and
// list commands), and prints one fact per line so that output SSM truncates still parses:
//
//	image-ref <the reference or ID the container was started from>
//	image-id sha256:<config digest>
//	repo-digest <repo>@sha256:<manifest digest>
//	error <what went wrong>
//	end
//
// container is validated by ValidContainer and quoted.
func Script(engine, container string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# polygraph: print the image the container %s runs (read-only: inspect and list only).
set -u
engine='%s'
container='%s'
echo "polygraph-runtime v1"
`, container, engine, container)
	if engine == "containerd" {
		b.WriteString(containerdScript)
	} else {
		b.WriteString(cliScript)
	}
	b.WriteString("echo \"end\"\n")
	return b.String()
}

// cliScript serves docker, podman and nerdctl, which share these commands and Go templates.
const cliScript = `if ! command -v "$engine" >/dev/null; then
  echo "error $engine is not installed"
  exit 0
fi
case "$container" in
  label=*)
    found=$("$engine" ps --quiet --no-trunc --filter "$container" | head -n 1)
    if [ -z "$found" ]; then
      echo "error no running container has $container"
      exit 0
    fi
    container=$found
    ;;
esac
if ! ref=$("$engine" container inspect --format '{{.Image}}' "$container" 2>&1); then
  echo "error $engine container inspect: $ref"
  exit 0
fi
echo "image-ref $ref"
"$engine" image inspect --format 'image-id {{.ID}}' "$ref"
"$engine" image inspect --format '{{range .RepoDigests}}repo-digest {{.}}{{println}}{{end}}' "$ref"
`

// containerdScript asks containerd's ctr; the namespace is CONTAINERD_NAMESPACE's, or "default".
const containerdScript = `if ! command -v ctr >/dev/null; then
  echo "error ctr is not installed"
  exit 0
fi
if ! info=$(ctr containers info "$container" 2>&1); then
  echo "error ctr containers info: $info"
  exit 0
fi
ref=$(printf '%s\n' "$info" | sed -n 's/^    "Image": "\(.*\)",$/\1/p')
if [ -z "$ref" ]; then
  echo "error ctr containers info printed no image"
  exit 0
fi
echo "image-ref $ref"
ctr images list "name==$ref" | awk 'NR > 1 { print "repo-digest " $1 "@" $3 }'
`

// parsed is what one script run printed.
type parsed struct {
	imageID     string
	repoDigests []string
	problem     string
	complete    bool
}

// parseOutput reads the script's output. Only whole lines count (SSM may cut the last one),
// and a line that is not the script's is ignored (stderr interleaved by a runtime).
func parseOutput(out string) parsed {
	var p parsed
	lines := strings.Split(out, "\n")
	lines = lines[:len(lines)-1] // the last piece is cut or empty
	for _, line := range lines {
		key, value, _ := strings.Cut(strings.TrimRight(line, "\r"), " ")
		value = strings.TrimSpace(value)
		switch key {
		case "image-id":
			if d := canonical(value); d != "" {
				p.imageID = d
			}
		case "repo-digest":
			if i := strings.LastIndex(value, "@"); i > 0 && canonical(value[i+1:]) != "" {
				p.repoDigests = append(p.repoDigests, value[:i]+"@"+canonical(value[i+1:]))
			}
		case "error":
			if p.problem == "" {
				p.problem = value
			}
		case "end":
			p.complete = true
		}
	}
	return p
}

// canonical returns d as sha256:<lower-case hex> (podman prints the bare hex), or "" when d
// is no sha256 digest.
func canonical(d string) string {
	c, _ := model.CanonicalDigest(d)
	return c
}
