package policy

import (
	"strconv"
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
		var containers []*yaml.Node
		for _, list := range ifBranches(get(get(res, "Properties"), "ContainerDefinitions"), 0) {
			for _, c := range items(list) {
				containers = append(containers, ifBranches(c, 0)...)
			}
		}
		for _, c := range containers {
			branches := ifBranches(get(c, "Image"), 0)
			for i, img := range branches {
				where := kv[0].Value + " container " + str(get(c, "Name"))
				if len(branches) > 1 {
					where += " (Fn::If branch " + strconv.Itoa(i+1) + ")"
				}
				out = append(out, cfnImage(file, where, img)...)
			}
		}
	}
	return out
}

// cfnImage returns the image of an Image value: unresolved for an intrinsic function.
func cfnImage(file, where string, img *yaml.Node) []Image {
	if fn := intrinsic(img); fn != "" {
		// The position is the start of the value, tag included (!Sub ...).
		raw := img.Value
		switch {
		case img.Kind != yaml.ScalarNode:
			raw = fn
		case strings.HasPrefix(img.Tag, "!"):
			raw = img.Tag + " " + img.Value
		}
		return []Image{{File: file, Line: img.Line, Column: img.Column, Raw: raw, Where: where,
			Kind:       KindCloudFormation,
			Unresolved: "the image is computed by the intrinsic function " + fn + " at deploy time"}}
	}
	if img.Kind == yaml.ScalarNode {
		return []Image{scalarImage(file, KindCloudFormation, where, img)}
	}
	return nil
}

// maxIfDepth bounds Fn::If nested in the branches of Fn::If.
const maxIfDepth = 8

// ifBranches returns the values an Fn::If (!If [Cond, A, B] or {"Fn::If": [Cond, A, B]}) can
// take, nested conditions included, leaving out AWS::NoValue; any other node is its own only
// value. Both branches are checked: either may be deployed.
func ifBranches(n *yaml.Node, depth int) []*yaml.Node {
	n = deref(n)
	if n == nil || isNoValue(n) {
		return nil
	}
	var args *yaml.Node
	switch {
	case n.Tag == "!If" && n.Kind == yaml.SequenceNode:
		args = n
	case n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "Fn::If":
		args = deref(n.Content[1])
	default:
		return []*yaml.Node{n}
	}
	if args == nil || args.Kind != yaml.SequenceNode || len(args.Content) != 3 || depth >= maxIfDepth {
		return []*yaml.Node{n} // not a well-formed condition: reported as an intrinsic
	}
	return append(ifBranches(args.Content[1], depth+1), ifBranches(args.Content[2], depth+1)...)
}

// isNoValue reports whether n is a reference to AWS::NoValue (the property is removed).
func isNoValue(n *yaml.Node) bool {
	if n.Tag == "!Ref" && n.Value == "AWS::NoValue" {
		return true
	}
	return n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "Ref" && str(n.Content[1]) == "AWS::NoValue"
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
