package policy

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// podSpecPaths locates the pod spec in every pod-bearing kind.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"PodTemplate":           {"template", "spec"},
	"Deployment":            {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// containerLists are the pod spec fields that hold containers.
var containerLists = []string{"initContainers", "containers", "ephemeralContainers"}

func isKubernetes(root *yaml.Node) bool {
	return str(get(root, "apiVersion")) != "" && str(get(root, "kind")) != ""
}

// kubernetesImages returns the images of a Kubernetes object, a List of them, or nothing for
// kinds that run no pods.
func kubernetesImages(file string, root *yaml.Node) []Image {
	return kubernetesObject(file, root, 0)
}

// maxListDepth bounds Lists nested in Lists (an alias can make a List contain itself).
const maxListDepth = 4

func kubernetesObject(file string, root *yaml.Node, depth int) []Image {
	kind := str(get(root, "kind"))
	if kind == "List" || strings.HasSuffix(kind, "List") {
		if depth >= maxListDepth {
			return []Image{unreadable(file, KindKubernetes, "the items of "+kind, get(root, "items"),
				fmt.Sprintf("Lists nested more than %d deep", maxListDepth))}
		}
		var out []Image
		for _, it := range items(get(root, "items")) {
			if it != nil && it.Kind == yaml.MappingNode && isKubernetes(it) {
				out = append(out, kubernetesObject(file, it, depth+1)...)
			}
		}
		return out
	}
	obj := kind + "/" + str(get(get(root, "metadata"), "name"))
	if path, ok := podSpecPaths[kind]; ok && isBuiltinGroup(str(get(root, "apiVersion"))) {
		spec := root
		for _, p := range path {
			spec = get(spec, p)
		}
		if isPodSpec(spec) {
			return podSpecImages(file, obj, spec)
		}
	}
	// Any other kind (Argo Rollout, OpenShift DeploymentConfig, Knative Service, a custom
	// resource), a built-in name in another API group (Volcano's batch.volcano.sh Job keeps
	// its pod templates under spec.tasks) or a built-in kind of unusual shape: its pod specs
	// are wherever its spec holds a containers list.
	var out []Image
	for _, spec := range findPodSpecs(get(root, "spec"), 0) {
		out = append(out, podSpecImages(file, obj, spec)...)
	}
	return out
}

// isBuiltinGroup reports whether apiVersion names a Kubernetes API group whose kinds have the
// pod spec paths of podSpecPaths: the core group and the built-in apps, batch and extensions.
func isBuiltinGroup(apiVersion string) bool {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return true // "v1": the core group
	}
	switch group {
	case "apps", "batch", "extensions":
		return true
	}
	return false
}

// isPodSpec reports whether n is a mapping with a list of containers, init containers or
// ephemeral containers.
func isPodSpec(n *yaml.Node) bool {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for _, list := range containerLists {
		if c := deref(get(n, list)); c != nil && c.Kind == yaml.SequenceNode {
			return true
		}
	}
	return false
}

// podSpecImages returns the images of the containers of a pod spec.
func podSpecImages(file, obj string, spec *yaml.Node) []Image {
	var out []Image
	for _, list := range containerLists {
		for i, c := range items(get(spec, list)) {
			img := get(c, "image")
			if img == nil || img.Kind != yaml.ScalarNode {
				continue
			}
			name := str(get(c, "name"))
			if name == "" {
				name = "#" + strconv.Itoa(i+1) // Knative lets a single container go unnamed
			}
			where := obj + " " + strings.TrimSuffix(list, "s") + " " + name
			out = append(out, scalarImage(file, KindKubernetes, where, img))
		}
	}
	return out
}

// maxPodSpecDepth bounds how deep under spec a pod spec is looked for.
const maxPodSpecDepth = 12

// findPodSpecs returns the mappings under n that hold a containers list of mappings, in
// document order, not looking inside a pod spec once found.
func findPodSpecs(n *yaml.Node, depth int) []*yaml.Node {
	n = deref(n)
	if n == nil || depth > maxPodSpecDepth {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		if c := get(n, "containers"); c != nil && c.Kind == yaml.SequenceNode && isContainerList(c) {
			return []*yaml.Node{n}
		}
		var out []*yaml.Node
		for _, kv := range entries(n) {
			if kv[0].Value == "metadata" || kv[0].Value == "status" {
				continue
			}
			out = append(out, findPodSpecs(kv[1], depth+1)...)
		}
		return out
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, it := range items(n) {
			out = append(out, findPodSpecs(it, depth+1)...)
		}
		return out
	}
	return nil
}

// isContainerList reports whether every element of a sequence is a mapping with an image or a
// name, as containers are.
func isContainerList(seq *yaml.Node) bool {
	for _, c := range items(seq) {
		if c == nil || c.Kind != yaml.MappingNode || get(c, "image") == nil && get(c, "name") == nil {
			return false
		}
	}
	return true
}
