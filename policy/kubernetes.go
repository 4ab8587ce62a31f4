package policy

import (
	"fmt"
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
	path, ok := podSpecPaths[kind]
	if !ok {
		return nil
	}
	spec := root
	for _, p := range path {
		spec = get(spec, p)
	}
	obj := kind + "/" + str(get(get(root, "metadata"), "name"))
	var out []Image
	for _, list := range containerLists {
		for _, c := range items(get(spec, list)) {
			img := get(c, "image")
			if img == nil || img.Kind != yaml.ScalarNode {
				continue
			}
			where := obj + " " + strings.TrimSuffix(list, "s") + " " + str(get(c, "name"))
			out = append(out, scalarImage(file, KindKubernetes, where, img))
		}
	}
	return out
}
