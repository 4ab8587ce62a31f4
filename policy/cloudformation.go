package policy

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// isCloudFormation recognises a CloudFormation (or SAM) template.
func isCloudFormation(root *yaml.Node) bool {
	if get(root, "AWSTemplateFormatVersion") != nil {
		return true
	}
	for _, kv := range entries(get(root, "Resources")) {
		if strings.HasPrefix(str(get(kv[1], "Type")), "AWS::") {
			return true
		}
	}
	return false
}

// cloudFormationImages returns the images of every AWS::ECS::TaskDefinition. An image computed
// by an intrinsic function is reported unresolved, never guessed.
func cloudFormationImages(file string, root *yaml.Node) []Image {
	var out []Image
	for _, kv := range entries(get(root, "Resources")) {
		res := kv[1]
		if str(get(res, "Type")) != "AWS::ECS::TaskDefinition" {
			continue
		}
		for _, c := range items(get(get(res, "Properties"), "ContainerDefinitions")) {
			img := get(c, "Image")
			if img == nil {
				continue
			}
			where := kv[0].Value + " container " + str(get(c, "Name"))
			if fn := intrinsic(img); fn != "" {
				// The position is the start of the value, tag included (!Sub ...).
				line, col := img.Line, img.Column
				raw := img.Value
				switch {
				case img.Kind != yaml.ScalarNode:
					raw = fn
				case strings.HasPrefix(img.Tag, "!"):
					raw = img.Tag + " " + img.Value
				}
				out = append(out, Image{File: file, Line: line, Column: col, Raw: raw, Where: where,
					Kind:       KindCloudFormation,
					Unresolved: "the image is computed by the intrinsic function " + fn + " at deploy time"})
				continue
			}
			if img.Kind == yaml.ScalarNode {
				out = append(out, scalarImage(file, KindCloudFormation, where, img))
			}
		}
	}
	return out
}

// intrinsic names the intrinsic function a node is (short form !Sub or long form {"Fn::Sub": ...}),
// or "" for a literal.
func intrinsic(n *yaml.Node) string {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		fn := strings.TrimPrefix(n.Tag, "!")
		if fn != "Ref" && fn != "Condition" {
			fn = "Fn::" + fn
		}
		return fn
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		k := n.Content[0].Value
		if k == "Ref" || strings.HasPrefix(k, "Fn::") {
			return k
		}
	}
	return ""
}
