package config

import (
	"regexp"
	"strings"
)

// containerRe is what a container name, ID or label selector may look like: it is quoted into
// the script SSM runs, so nothing a shell would interpret is accepted. At most 256 characters
// (validContainer): written as a {0,255} repetition, the expression compiled into 255 nested
// copies at every start of polygraph, 3,700 allocations and 0.28 MB.
var containerRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/=-]*$`)

func validContainer(c string) bool { return len(c) <= 256 && containerRe.MatchString(c) }

// runtime validates probe.runtime (and the probe.digest.source ssm|docker shorthand, which it
// turns into probe.runtime), probe.digest.tag and the AWS-only digest sources.
func (v *validator) runtime() {
	c := v.cfg
	d := &c.Probe.Digest
	r := &c.Probe.Runtime
	hasAWSFleet := c.Fleet.EC2 != nil || len(c.Fleet.TargetGroups) > 0
	// probe.digest.container and probe.digest.tag are read only by their sources. SPEC §3's
	// reference example sets them beside source http, so they are not refused elsewhere; a
	// warning says they do nothing there.
	if d.Container != "" && d.Source != "ssm" && d.Source != "docker" {
		v.warn("probe.digest.container", "probe.digest.container is read only when probe.digest.source is ssm or docker (it is %q): it has no effect", d.Source)
	}
	if d.Tag != "" && d.Source != "ec2-tag" {
		v.warn("probe.digest.tag", "probe.digest.tag is read only when probe.digest.source is ec2-tag (it is %q): it has no effect", d.Source)
	}
	if d.Source == "ec2-tag" {
		if !hasAWSFleet {
			v.fail("probe.digest.source", "probe.digest.source ec2-tag reads instance tags: it needs fleet.ec2 or fleet.target_groups")
		}
		if d.Tag == "" {
			d.Tag = "image-digest"
		}
	}
	base := "probe.runtime"
	if d.Source == "ssm" || d.Source == "docker" {
		if r.Source != "" {
			v.fail("probe.digest.source", "probe.digest.source %s is a shorthand for probe.runtime, which is also set: keep one", d.Source)
			return
		}
		r.Source, r.Container, base = d.Source, d.Container, "probe.digest"
		d.Source, d.Container = "", ""
	}
	if r.Source == "" {
		if r.Container != "" || r.Engine != "" || r.DockerHost != "" || r.TLS != (RuntimeTLS{}) {
			v.fail("probe.runtime", "probe.runtime needs source (ssm or docker)")
		}
		return
	}
	v.oneOf(base+".source", r.Source, RuntimeKinds)
	switch {
	case r.Container == "":
		v.fail(base, "%s.source %s needs container", base, r.Source)
	case !validContainer(r.Container):
		v.fail(base+".container", "%s.container %q must be a container name, an ID or label=KEY=VALUE", base, r.Container)
	}
	switch r.Source {
	case "ssm":
		if !hasAWSFleet {
			v.fail(base+".source", "%s.source ssm needs instance IDs: add fleet.ec2 or fleet.target_groups", base)
		}
		if r.Engine == "" {
			r.Engine = "docker"
		}
		v.oneOf(base+".engine", r.Engine, Engines)
		if r.DockerHost != "" || r.TLS != (RuntimeTLS{}) {
			v.fail(base, "probe.runtime.docker_host and probe.runtime.tls apply to source docker, not ssm")
		}
	case "docker":
		if r.Engine != "" {
			v.fail(base+".engine", "probe.runtime.engine applies to source ssm; the docker source asks the Docker Engine API")
		}
		if r.DockerHost == "" {
			r.DockerHost = "tcp://{host}:2376"
		}
		if !strings.HasPrefix(r.DockerHost, "tcp://") || !strings.Contains(r.DockerHost, "{host}") {
			v.fail(base+".docker_host", "probe.runtime.docker_host must be tcp://{host}:PORT, got %q", r.DockerHost)
		}
		if (r.TLS.CertFile == "") != (r.TLS.KeyFile == "") {
			v.fail(base+".tls", "probe.runtime.tls needs both cert_file and key_file, or neither")
		}
	}
}
