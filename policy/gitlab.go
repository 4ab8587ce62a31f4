package policy

import (
	"context"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// KindGitLabCI is a GitLab CI/CD configuration (.gitlab-ci.yml and the files it includes).
const KindGitLabCI Kind = "gitlab-ci"

// gitlabKeywords are the top-level keys of a GitLab CI configuration that are not jobs.
var gitlabKeywords = map[string]bool{
	"default": true, "include": true, "stages": true, "variables": true, "workflow": true,
	"image": true, "services": true, "cache": true, "before_script": true, "after_script": true,
	"spec": true,
}

// isGitLabCI recognises a GitLab CI configuration: a stages list, a default section with an
// image or services, or a job (a mapping with script, run or trigger).
func isGitLabCI(root *yaml.Node) bool {
	if s := get(root, "stages"); s != nil && s.Kind == yaml.SequenceNode {
		return true
	}
	if d := get(root, "default"); d != nil && (get(d, "image") != nil || get(d, "services") != nil) {
		return true
	}
	for _, kv := range entries(root) {
		if !gitlabKeywords[kv[0].Value] && isGitLabJob(kv[1]) {
			return true
		}
	}
	return false
}

func isGitLabJob(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.MappingNode && (get(n, "script") != nil || get(n, "trigger") != nil || get(n, "run") != nil)
}

// gitlabImages returns the image and services of the default section, of the deprecated
// top-level image and services, and of every job (hidden .template jobs included: the jobs
// extending them inherit their images). $VAR and ${VAR} are expanded from the file's global
// variables and the job's own; a variable defined in neither (a CI/CD setting, a predefined
// variable) leaves the image unresolved.
func gitlabImages(ctx context.Context, file string, root *yaml.Node) []Image {
	global := gitlabVariables(get(root, "variables"))
	g := &gitlab{file: file, e: newExpander(ctx, nil, "$$", 0)}
	g.section("the top level", root, global)
	g.section("default", get(root, "default"), global)
	for _, kv := range entries(root) {
		// A job, or any other top-level mapping naming images: a hidden .template, a job that
		// gets its script through extends.
		if gitlabKeywords[kv[0].Value] || kv[1] == nil || kv[1].Kind != yaml.MappingNode {
			continue
		}
		vars := map[string]string{}
		for k, v := range global {
			vars[k] = v
		}
		for k, v := range gitlabVariables(get(kv[1], "variables")) {
			vars[k] = v
		}
		g.section("job "+kv[0].Value, kv[1], vars)
	}
	return g.out
}

type gitlab struct {
	file string
	e    *expander
	out  []Image
}

// section adds the image and services of a job, of default, or of the top level.
func (g *gitlab) section(where string, n *yaml.Node, vars map[string]string) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	g.image(where+" image", imageValue(get(n, "image")), vars)
	for i, svc := range items(get(n, "services")) {
		g.image(where+" service "+strconv.Itoa(i+1), imageValue(svc), vars)
	}
}

// imageValue returns the scalar naming an image: the value itself, or its name key.
func imageValue(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.MappingNode {
		n = get(n, "name")
	}
	if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
		return nil
	}
	return n
}

func (g *gitlab) image(where string, n *yaml.Node, vars map[string]string) {
	if n == nil {
		return
	}
	img := scalarImage(g.file, KindGitLabCI, where, n)
	img.Ref = n.Value
	if !strings.Contains(n.Value, "$") {
		g.out = append(g.out, img)
		return
	}
	g.e.vars, g.e.budget = vars, MaxExpandBytes+len(n.Value)
	v, missing, err := g.e.expand(n.Value)
	switch {
	case err != nil && g.e.ctx.Err() != nil:
		return // Extract reports the context's error
	case err != nil:
		img.Ref, img.Unreadable = "", "expanding variables: "+err.Error()
		g.e.err = nil
	case len(missing) > 0:
		img.Ref = ""
		img.Unresolved = "the image needs " + strings.Join(quoteAll(missing), ", ") + ", which the file does not define (a CI/CD variable or a predefined one)"
	default:
		img.Ref = v
	}
	g.out = append(g.out, img)
}

// gitlabVariables returns the variables of a variables: section (a value, or value: in the
// long form).
func gitlabVariables(n *yaml.Node) map[string]string {
	vars := map[string]string{}
	for _, kv := range entries(n) {
		v := kv[1]
		if v != nil && v.Kind == yaml.MappingNode {
			v = get(v, "value")
		}
		if v != nil && v.Kind == yaml.ScalarNode {
			vars[kv[0].Value] = v.Value
		}
	}
	return vars
}
