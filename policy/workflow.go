package policy

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

const dockerScheme = "docker://"

// isWorkflow recognises a GitHub Actions workflow: top-level on and jobs.
func isWorkflow(root *yaml.Node) bool {
	jobs := get(root, "jobs")
	return jobs != nil && jobs.Kind == yaml.MappingNode && (get(root, "on") != nil || get(root, "true") != nil)
}

// isDockerAction recognises a Docker container action's metadata (action.yml with
// runs.using: docker and a registry image).
func isDockerAction(root *yaml.Node) bool {
	runs := get(root, "runs")
	return str(get(runs, "using")) == "docker" && strings.HasPrefix(str(get(runs, "image")), dockerScheme)
}

// dockerActionImages returns runs.image of a Docker container action.
func dockerActionImages(file string, root *yaml.Node) []Image {
	n := get(get(root, "runs"), "image")
	img := scalarImage(file, KindWorkflow, "action "+str(get(root, "name")), n)
	img.Column += len(dockerScheme)
	img.Raw = strings.TrimPrefix(n.Value, dockerScheme)
	img.Ref = img.Raw
	if hasExpression(img.Raw) {
		img.Ref = ""
		img.Unresolved = "the image is a workflow expression evaluated at run time"
	}
	return []Image{img}
}

// workflowImages returns jobs.*.container, jobs.*.services.*.image and steps' uses: docker://.
func workflowImages(file string, root *yaml.Node) []Image {
	var out []Image
	add := func(where string, n *yaml.Node, prefix string) {
		if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
			return
		}
		img := scalarImage(file, KindWorkflow, where, n)
		img.Column += len(prefix)
		img.Raw = strings.TrimPrefix(n.Value, prefix)
		img.Ref = img.Raw
		if hasExpression(img.Raw) {
			img.Ref = ""
			img.Unresolved = "the image is a workflow expression evaluated at run time"
		}
		out = append(out, img)
	}
	for _, job := range entries(get(root, "jobs")) {
		id := job[0].Value
		if c := get(job[1], "container"); c != nil {
			if c.Kind == yaml.ScalarNode {
				add("job "+id+" container", c, "")
			} else {
				add("job "+id+" container", get(c, "image"), "")
			}
		}
		if svcs := get(job[1], "services"); svcs != nil && svcs.Kind == yaml.ScalarNode && hasExpression(svcs.Value) {
			// services: ${{ fromJSON(...) }}: the whole set is decided at run time.
			line, col := position(svcs)
			out = append(out, Image{File: file, Line: line, Column: col, Raw: svcs.Value, Where: "job " + id + " services",
				Kind: KindWorkflow, Unresolved: "the services are a workflow expression evaluated at run time"})
		}
		for _, svc := range entries(get(job[1], "services")) {
			where := "job " + id + " service " + svc[0].Value
			if svc[1] != nil && svc[1].Kind == yaml.ScalarNode {
				add(where, svc[1], "")
			} else {
				add(where, get(svc[1], "image"), "")
			}
		}
		for i, step := range items(get(job[1], "steps")) {
			uses := get(step, "uses")
			if strings.HasPrefix(str(uses), dockerScheme) {
				where := "job " + id + " step " + stepName(step, i)
				add(where, uses, dockerScheme)
			}
		}
	}
	return out
}

func stepName(step *yaml.Node, i int) string {
	if n := str(get(step, "name")); n != "" {
		return n
	}
	if n := str(get(step, "id")); n != "" {
		return n
	}
	return "#" + strconv.Itoa(i+1)
}
