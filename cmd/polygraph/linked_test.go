package main

import (
	"debug/elf"
	"runtime"
	"strings"
	"testing"
)

// TestUnusedAWSOperationsAreNotLinked reads the symbol table of the binary TestMain built and
// checks that the AWS operations polygraph calls are linked and a sample of those it never
// calls are not. urfave/cli's help links text/template, which calls methods by name; from
// then on the linker keeps every exported method of every type that reaches an interface
// value, directly or as a field. One *ec2.Client held that way (in a struct that becomes a
// fleet.Source, or handed to an SDK paginator) links all of EC2's operations: the binary
// grew from 33 to 76 MB and every start touched 4 MiB more of it.
func TestUnusedAWSOperationsAreNotLinked(t *testing.T) {
	syms := linkedSymbols(t)
	linked := map[string]bool{}
	for _, s := range syms {
		linked[s.Name] = true
	}
	const sdk = "github.com/aws/aws-sdk-go-v2/service/"
	for _, name := range []string{
		sdk + "ec2.(*Client).DescribeInstances",
		sdk + "elasticloadbalancingv2.(*Client).DescribeTargetGroups",
		sdk + "elasticloadbalancingv2.(*Client).DescribeTargetHealth",
		sdk + "ssm.(*Client).SendCommand",
		sdk + "ssm.(*Client).ListCommandInvocations",
		sdk + "autoscaling.(*Client).CompleteLifecycleAction",
		sdk + "autoscaling.(*Client).RecordLifecycleActionHeartbeat",
		sdk + "autoscaling.(*Client).DescribeAutoScalingGroups",
		sdk + "sqs.(*Client).ReceiveMessage",
		sdk + "sqs.(*Client).DeleteMessage",
		sdk + "sqs.(*Client).ChangeMessageVisibility",
		sdk + "ecr.(*Client).DescribeRepositories",
		sdk + "ecr.(*Client).GetAuthorizationToken",
		sdk + "ecrpublic.(*Client).GetAuthorizationToken",
	} {
		if !linked[name] {
			t.Errorf("%s is not in the binary: the test no longer sees what it checks", name)
		}
	}
	for _, name := range []string{
		sdk + "ec2.(*Client).RunInstances",
		sdk + "ec2.(*Client).AcceptAddressTransfer",
		sdk + "ec2.(*Client).DescribeImages",
		sdk + "elasticloadbalancingv2.(*Client).CreateLoadBalancer",
		sdk + "ssm.(*Client).PutParameter",
		sdk + "autoscaling.(*Client).CreateAutoScalingGroup",
		sdk + "autoscaling.(*Client).SetDesiredCapacity",
		sdk + "sqs.(*Client).SendMessage",
		sdk + "sqs.(*Client).DeleteQueue",
		sdk + "ecr.(*Client).PutImage",
		sdk + "ecr.(*Client).DeleteRepository",
		sdk + "ecrpublic.(*Client).PutImage",
	} {
		if linked[name] {
			t.Errorf("%s is linked though polygraph never calls it: an AWS client (or a value holding one) became an interface value; keep its methods instead, as fleet.EC2 does", name)
		}
	}
}

// TestNoAWSSchemaTablesLinked keeps the AWS service modules on their generated serializers.
// From October 2026 the SDK moves each service to schema-based (de)serialization, whose
// package-level schema tables are built at start-up and stay live: with the nine services
// polygraph links, 3 MB of heap in every process before it does anything, which the garbage
// collector's doubling makes about 7 MiB of peak RSS in a verify of 10,000 instances
// (docs/benchmark.md). go.mod pins those services to their last releases without the tables;
// an upgrade that brings them back fails here, so it is a decision and not an accident.
func TestNoAWSSchemaTablesLinked(t *testing.T) {
	syms := linkedSymbols(t)
	const sdk = "github.com/aws/aws-sdk-go-v2/service/"
	seen := map[string]bool{}
	for _, s := range syms {
		rest, ok := strings.CutPrefix(s.Name, sdk)
		if !ok {
			continue
		}
		if service, tail, ok := strings.Cut(rest, "/schemas."); ok && !strings.Contains(service, ".") && !seen[service] {
			seen[service] = true
			t.Errorf("%s%s/schemas is linked (%s...): this release of the service builds its schema tables at start-up; pin the last release before \"Enable schema-based (de)serialization\" in its CHANGELOG, or measure and update docs/benchmark.md", sdk, service, tail[:min(len(tail), 20)])
		}
	}
	if !hasPrefix(syms, sdk+"ssm.") {
		t.Errorf("no symbol of %sssm is in the binary: the test no longer sees what it checks", sdk)
	}
}

func hasPrefix(syms []elf.Symbol, prefix string) bool {
	for _, s := range syms {
		if strings.HasPrefix(s.Name, prefix) {
			return true
		}
	}
	return false
}

// linkedSymbols returns the symbol table of the binary TestMain built.
func linkedSymbols(t *testing.T) []elf.Symbol {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads an ELF symbol table")
	}
	f, err := elf.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("reading the symbols of %s: %v", binary, err)
	}
	return syms
}
