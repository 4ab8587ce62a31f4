package policy

import "go.yaml.in/yaml/v3"

// isECS recognises an ECS task definition: register-task-definition input (top-level
// containerDefinitions) or describe-task-definition output (taskDefinition.containerDefinitions).
func isECS(root *yaml.Node) bool {
	return ecsContainers(root) != nil
}

func ecsContainers(root *yaml.Node) *yaml.Node {
	if cd := get(root, "containerDefinitions"); cd != nil && cd.Kind == yaml.SequenceNode {
		return cd
	}
	if cd := get(get(root, "taskDefinition"), "containerDefinitions"); cd != nil && cd.Kind == yaml.SequenceNode {
		return cd
	}
	return nil
}

func ecsImages(file string, root *yaml.Node) []Image {
	family := str(get(root, "family"))
	if family == "" {
		family = str(get(get(root, "taskDefinition"), "family"))
	}
	var out []Image
	for _, c := range items(ecsContainers(root)) {
		img := get(c, "image")
		if img == nil || img.Kind != yaml.ScalarNode {
			continue
		}
		where := "task definition " + family + " container " + str(get(c, "name"))
		out = append(out, scalarImage(file, KindECS, where, img))
	}
	return out
}
