package awsfake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SSMInstance is one instance SSM manages. Env is the environment its commands run with: the
// fake container engines in testdata/bin read FAKE_CONTAINER (the running container's name),
// FAKE_IMAGE_REF (the image reference it was started from), FAKE_IMAGE_ID (the config digest)
// and FAKE_REPO_DIGESTS (space-separated repo@sha256:... digests).
type SSMInstance struct {
	Env map[string]string
}

// Runner runs a shell script on an instance and returns its combined output and exit code.
type Runner func(ctx context.Context, instanceID, script string, env map[string]string) (output string, exitCode int)

// SSM fakes SendCommand, ListCommandInvocations and GetCommandInvocation (JSON 1.1). A sent
// script runs (through Runner, by default bash with PATH pointing at the fake engines) and
// its invocation becomes visible after a delay, as in SSM.
type SSM struct {
	mu           sync.Mutex
	instances    map[string]SSMInstance
	commands     map[string]*ssmCommand
	seq          int
	run          Runner
	visibleAfter time.Duration
	quiet        bool
	running      sync.WaitGroup
}

type ssmCommand struct {
	id     string
	script string
	sent   time.Time
	order  []string
	invs   map[string]*ssmInvocation
}

type ssmInvocation struct {
	status string
	output string
	code   int
}

// SSMOutputLimit is how much plugin output ListCommandInvocations returns, as SSM truncates it.
const SSMOutputLimit = 2500

func newSSM() *SSM {
	return &SSM{instances: map[string]SSMInstance{}, commands: map[string]*ssmCommand{}, run: BashRunner}
}

// Manage registers instances as managed by SSM (others are answered InvalidInstanceId).
func (s *SSM) Manage(id string, in SSMInstance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.instances[id] = in
}

// SetRunner replaces how scripts run (BashRunner unless set).
func (s *SSM) SetRunner(r Runner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run = r
}

// SetVisibleAfter sets how long after SendCommand an invocation stays invisible (listed by
// nobody, GetCommandInvocation answering InvocationDoesNotExist).
func (s *SSM) SetVisibleAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.visibleAfter = d
}

// SetQuietInvalid makes InvalidInstanceId answers name no instance, as SSM's sometimes do.
func (s *SSM) SetQuietInvalid(quiet bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quiet = quiet
}

// Scripts returns every script sent, oldest first.
func (s *SSM) Scripts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for i := 1; i <= s.seq; i++ {
		out = append(out, s.commands[commandID(i)].script)
	}
	return out
}

func (s *SSM) wait() { s.running.Wait() }

func commandID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// BinDir is the directory of the fake container engines (docker, podman, nerdctl, ctr).
func BinDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "bin")
}

// BashRunner runs the script with bash, PATH set to BinDir first, and the instance's env.
func BashRunner(ctx context.Context, _ string, script string, env map[string]string) (string, int) {
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = []string{"PATH=" + BinDir() + ":/usr/bin:/bin", "LC_ALL=C"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	case err != nil:
		return out.String() + err.Error(), 1
	}
	return out.String(), 0
}

func (s *SSM) action(r *http.Request, _ []byte) string {
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	return op
}

func (s *SSM) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

func (s *SSM) answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(v)
}

func (s *SSM) serve(w http.ResponseWriter, action string, _ url.Values, body []byte) {
	switch action {
	case "SendCommand":
		s.sendCommand(w, body)
	case "ListCommandInvocations":
		s.listInvocations(w, body)
	case "GetCommandInvocation":
		s.getInvocation(w, body)
	default:
		s.fail(w, 400, "UnknownOperationException", action)
	}
}

func (s *SSM) sendCommand(w http.ResponseWriter, body []byte) {
	var in struct {
		DocumentName string
		InstanceIds  []string
		Parameters   map[string][]string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.fail(w, 400, "SerializationException", err.Error())
		return
	}
	if in.DocumentName != "AWS-RunShellScript" {
		s.fail(w, 400, "InvalidDocument", "Document "+in.DocumentName+" does not exist in your account")
		return
	}
	if len(in.InstanceIds) == 0 || len(in.InstanceIds) > 50 {
		s.fail(w, 400, "ValidationException", fmt.Sprintf("1 validation error detected: Value at 'instanceIds' failed to satisfy constraint: Member must have length less than or equal to 50 (got %d)", len(in.InstanceIds)))
		return
	}
	s.mu.Lock()
	var invalid []string
	for _, id := range in.InstanceIds {
		if _, ok := s.instances[id]; !ok {
			invalid = append(invalid, id)
		}
	}
	if len(invalid) > 0 {
		msg := fmt.Sprintf("Instances [[%s]] not in a valid state for account 123456789012", strings.Join(invalid, ", "))
		if s.quiet {
			msg = ""
		}
		s.mu.Unlock()
		s.fail(w, 400, "InvalidInstanceId", msg)
		return
	}
	s.seq++
	c := &ssmCommand{id: commandID(s.seq), script: strings.Join(in.Parameters["commands"], "\n"), sent: time.Now(), invs: map[string]*ssmInvocation{}}
	s.commands[c.id] = c
	run := s.run
	for _, id := range in.InstanceIds {
		inv := &ssmInvocation{status: "InProgress"}
		c.invs[id] = inv
		c.order = append(c.order, id)
		env := s.instances[id].Env
		s.running.Add(1)
		go func() {
			defer s.running.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, code := run(ctx, id, c.script, env)
			if len(out) > SSMOutputLimit {
				out = out[:SSMOutputLimit]
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			inv.output, inv.code, inv.status = out, code, "Success"
			if code != 0 {
				inv.status = "Failed"
			}
		}()
	}
	s.mu.Unlock()
	s.answer(w, map[string]any{"Command": map[string]any{
		"CommandId": c.id, "DocumentName": in.DocumentName, "InstanceIds": in.InstanceIds, "Status": "Pending",
	}})
}

// visible lists the command's invocations SSM shows by now.
func (s *SSM) visible(c *ssmCommand) []string {
	if time.Since(c.sent) < s.visibleAfter {
		return nil
	}
	return c.order
}

func (s *SSM) invocationJSON(c *ssmCommand, id string, details bool) map[string]any {
	inv := c.invs[id]
	m := map[string]any{"CommandId": c.id, "InstanceId": id, "Status": inv.status, "StatusDetails": inv.status, "DocumentName": "AWS-RunShellScript"}
	if details {
		m["CommandPlugins"] = []map[string]any{{
			"Name": "aws:runShellScript", "Status": inv.status, "StatusDetails": inv.status,
			"Output": inv.output, "ResponseCode": inv.code,
		}}
	}
	return m
}

func (s *SSM) listInvocations(w http.ResponseWriter, body []byte) {
	var in struct {
		CommandId  string
		Details    bool
		MaxResults int
		NextToken  string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.fail(w, 400, "SerializationException", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.commands[in.CommandId]
	if c == nil {
		s.fail(w, 400, "InvalidCommandId", "")
		return
	}
	size := in.MaxResults
	if size <= 0 || size > 50 {
		size = 50
	}
	ids := s.visible(c)
	start, _ := strconv.Atoi(in.NextToken)
	start = min(max(start, 0), len(ids))
	end := min(start+size, len(ids))
	out := map[string]any{}
	var invs []map[string]any
	for _, id := range ids[start:end] {
		invs = append(invs, s.invocationJSON(c, id, in.Details))
	}
	out["CommandInvocations"] = invs
	if end < len(ids) {
		out["NextToken"] = strconv.Itoa(end)
	}
	s.answer(w, out)
}

func (s *SSM) getInvocation(w http.ResponseWriter, body []byte) {
	var in struct{ CommandId, InstanceId string }
	if err := json.Unmarshal(body, &in); err != nil {
		s.fail(w, 400, "SerializationException", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.commands[in.CommandId]
	if c == nil {
		s.fail(w, 400, "InvalidCommandId", "")
		return
	}
	if !slices.Contains(s.visible(c), in.InstanceId) {
		s.fail(w, 400, "InvocationDoesNotExist", "")
		return
	}
	inv := c.invs[in.InstanceId]
	s.answer(w, map[string]any{"CommandId": c.id, "InstanceId": in.InstanceId, "Status": inv.status,
		"StandardOutputContent": inv.output, "ResponseCode": inv.code, "PluginName": "aws:runShellScript"})
}
