// Package aws_test checks the CloudFormation template of the lifecycle hook against the code:
// the IAM actions it grants polygraph are exactly the AWS calls polygraph's code makes.
package aws_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const root = "../.."

// iamPrefix maps an SDK service package to its IAM action prefix.
var iamPrefix = map[string]string{"autoscaling": "autoscaling", "ec2": "ec2", "sqs": "sqs", "ssm": "ssm"}

// sdkCalls returns the IAM actions of the AWS SDK operations called in the given nodes: an
// operation counts when a node builds its input (svc.OpInput{...}) and calls it
// (client.Op(...) or svc.NewOpPaginator(...)).
func sdkCalls(file *ast.File, funcs []ast.Node) map[string]bool {
	svc := map[string]string{} // local import name -> service
	for _, im := range file.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		rest, ok := strings.CutPrefix(p, "github.com/aws/aws-sdk-go-v2/service/")
		if !ok || strings.Contains(rest, "/") {
			continue
		}
		name := rest
		if im.Name != nil {
			name = im.Name.Name
		}
		svc[name] = rest
	}
	out := map[string]bool{}
	for _, fn := range funcs {
		inputs := map[string]string{} // operation -> service, from &svc.OpInput{...}
		called := map[string]bool{}
		ast.Inspect(fn, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if ts, ok := n.Type.(*ast.SelectorExpr); ok {
					if pkg, ok := ts.X.(*ast.Ident); ok && svc[pkg.Name] != "" {
						if op, ok := strings.CutSuffix(ts.Sel.Name, "Input"); ok {
							inputs[op] = svc[pkg.Name]
						}
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					called[sel.Sel.Name] = true
				}
			}
			return true
		})
		for op, service := range inputs {
			if called[op] || called["New"+op+"Paginator"] {
				out[iamPrefix[service]+":"+op] = true
			}
		}
	}
	return out
}

type goFile struct {
	path string
	file *ast.File
}

func parseDir(t *testing.T, dir string) []goFile {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	var out []goFile
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), m, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, goFile{filepath.ToSlash(strings.TrimPrefix(m, root+"/")), f})
	}
	if len(out) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return out
}

// codeActions derives what an entry point calls: every SDK call in the hook package (but the
// files skipped), in the launch verifier (internal/run/launch.go), in the entry point's own
// package, and in the fleet.EC2 methods those call.
func codeActions(t *testing.T, entry string, skip ...string) []string {
	t.Helper()
	files := append(parseDir(t, "hook"), parseDir(t, entry)...)
	launch, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "internal/run/launch.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, goFile{"internal/run/launch.go", launch})
	called := map[string]bool{}
	out := map[string]bool{}
	for _, f := range files {
		if slices.Contains(skip, f.path) {
			continue
		}
		for a := range sdkCalls(f.file, []ast.Node{f.file}) {
			out[a] = true
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				called[sel.Sel.Name] = true
			}
			return true
		})
	}
	for _, f := range parseDir(t, "fleet") {
		for _, d := range f.file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !called[fd.Name.Name] || !strings.Contains(types(fd.Recv), "EC2") {
				continue
			}
			for a := range sdkCalls(f.file, []ast.Node{fd}) {
				out[a] = true
			}
		}
	}
	return sorted(out)
}

func types(fl *ast.FieldList) string {
	var b strings.Builder
	for _, f := range fl.List {
		ast.Inspect(f.Type, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				b.WriteString(id.Name)
			}
			return true
		})
	}
	return b.String()
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// node helpers over the template's yaml.Node tree (CloudFormation's !Ref, !Sub, !GetAtt, !If
// tags are kept as tags on ordinary nodes).
func get(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalars(n *yaml.Node) []string {
	switch {
	case n == nil:
		return nil
	case n.Kind == yaml.ScalarNode:
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, scalars(c)...)
	}
	return out
}

func loadTemplate(t *testing.T) *yaml.Node {
	t.Helper()
	data, err := os.ReadFile("polygraph-hook.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("polygraph-hook.yaml does not parse: %v", err)
	}
	return doc.Content[0]
}

// policyActions returns the actions a policy document allows.
func policyActions(doc *yaml.Node) []string {
	var out []string
	for _, st := range get(doc, "Statement").Content {
		if e := get(st, "Effect"); e == nil || e.Value != "Allow" {
			continue
		}
		out = append(out, scalars(get(st, "Action"))...)
	}
	slices.Sort(out)
	return out
}

func TestTemplateGrantsExactlyWhatTheCodeCalls(t *testing.T) {
	tpl := loadTemplate(t)
	res := get(tpl, "Resources")
	if res == nil {
		t.Fatal("no Resources")
	}
	// References must name declared resources, parameters or pseudo-parameters.
	declared := map[string]bool{"AWS::Partition": true, "AWS::Region": true, "AWS::AccountId": true, "AWS::NoValue": true}
	for _, sec := range []string{"Resources", "Parameters"} {
		for i := 0; i < len(get(tpl, sec).Content); i += 2 {
			declared[get(tpl, sec).Content[i].Value] = true
		}
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Tag {
		case "!Ref":
			if !declared[n.Value] {
				t.Errorf("line %d: !Ref %s names nothing declared", n.Line, n.Value)
			}
		case "!GetAtt":
			if name, _, _ := strings.Cut(n.Value, "."); !declared[name] {
				t.Errorf("line %d: !GetAtt %s names nothing declared", n.Line, n.Value)
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(tpl)

	lambda := codeActions(t, "cmd/polygraph-lambda", "hook/serve.go")
	worker := codeActions(t, "cmd/polygraph")
	worker = slices.DeleteFunc(worker, func(a string) bool { return a == "ssm:GetParameter" })
	for _, want := range []string{"autoscaling:CompleteLifecycleAction", "ec2:DescribeInstances", "ssm:GetParameter"} {
		if !slices.Contains(lambda, want) {
			t.Fatalf("the code scan found %v: it misses %s, so it is broken", lambda, want)
		}
	}
	role := get(res, "FunctionRole")
	var granted []string
	for _, p := range get(get(role, "Properties"), "Policies").Content {
		granted = append(granted, policyActions(get(p, "PolicyDocument"))...)
	}
	slices.Sort(granted)
	if !slices.Equal(granted, lambda) {
		t.Errorf("the function role grants %v\nthe function calls     %v", granted, lambda)
	}
	if got := policyActions(get(get(get(res, "WorkerPolicy"), "Properties"), "PolicyDocument")); !slices.Equal(got, worker) {
		t.Errorf("the worker policy grants %v\nhook serve calls          %v", got, worker)
	}
	// The SQS poller's policy is Lambda's, documented by AWS for SQS event sources.
	poll := policyActions(get(get(get(res, "SQSPollingPolicy"), "Properties"), "PolicyDocument"))
	if want := []string{"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"}; !slices.Equal(poll, want) {
		t.Errorf("the SQS event source policy grants %v, want %v", poll, want)
	}
	// The lifecycle calls are scoped to the group, never "*".
	for _, p := range get(get(role, "Properties"), "Policies").Content {
		for _, st := range get(get(p, "PolicyDocument"), "Statement").Content {
			acts := scalars(get(st, "Action"))
			if slices.Contains(acts, "autoscaling:CompleteLifecycleAction") && !strings.Contains(get(st, "Resource").Value, "autoScalingGroupName/${AutoScalingGroupName}") {
				t.Errorf("line %d: CompleteLifecycleAction must be scoped to the group", st.Line)
			}
		}
	}
}
