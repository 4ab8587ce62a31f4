package awsfake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// AutoScaling fakes the lifecycle-action calls of Auto Scaling (query protocol, XML answers):
// CompleteLifecycleAction, RecordLifecycleActionHeartbeat and DescribeAutoScalingGroups. An
// action is active until it is completed or its heartbeat timeout passes without a
// heartbeat; completing or heartbeating an action that is not active answers AWS's
// "ValidationError: No active Lifecycle Action found".
type AutoScaling struct {
	mu      sync.Mutex
	groups  map[string][]GroupInstance
	actions map[string]*LifecycleAction
	now     func() time.Time
}

// GroupInstance is one member of a group as DescribeAutoScalingGroups lists it.
type GroupInstance struct {
	ID    string
	State string // Pending:Wait, InService, Terminating:Wait, ...
}

// LifecycleAction is one pending lifecycle action.
type LifecycleAction struct {
	Group, Hook, Instance, Token string
	// Timeout is the hook's heartbeat timeout: the action times out when this long passes
	// without a heartbeat.
	Timeout time.Duration
	// Result is CONTINUE or ABANDON once completed, "timeout" once timed out.
	Result string
	// Completions counts the CompleteLifecycleAction calls Auto Scaling accepted for it.
	Completions int
	Heartbeats  int
	deadline    time.Time
}

func newAutoScaling() *AutoScaling {
	return &AutoScaling{groups: map[string][]GroupInstance{}, actions: map[string]*LifecycleAction{}, now: time.Now}
}

// AutoScaling returns the server's Auto Scaling fake, registering it on first use.
func (s *Server) AutoScaling() *AutoScaling {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.services["autoscaling"].(*AutoScaling); ok {
		return a
	}
	a := newAutoScaling()
	s.services["autoscaling"] = a
	return a
}

// HookEnv is Env plus the Auto Scaling and SQS endpoints.
func (s *Server) HookEnv(region string) []string {
	return append(s.Env(region), "AWS_ENDPOINT_URL_AUTO_SCALING="+s.URL(), "AWS_ENDPOINT_URL_SQS="+s.URL())
}

// SetGroup sets a group's members.
func (a *AutoScaling) SetGroup(name string, members ...GroupInstance) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.groups[name] = members
}

// AddAction registers a pending action (what Auto Scaling does when an instance enters
// Pending:Wait).
func (a *AutoScaling) AddAction(act LifecycleAction) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if act.Timeout == 0 {
		act.Timeout = time.Hour
	}
	act.deadline = a.now().Add(act.Timeout)
	a.actions[act.Token] = &act
}

// Action returns a copy of the action with the token, after applying its timeout.
func (a *AutoScaling) Action(token string) (LifecycleAction, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	act, ok := a.actions[token]
	if !ok {
		return LifecycleAction{}, false
	}
	a.expire(act)
	return *act, true
}

// Actions returns copies of every action.
func (a *AutoScaling) Actions() []LifecycleAction {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]LifecycleAction, 0, len(a.actions))
	for _, act := range a.actions {
		a.expire(act)
		out = append(out, *act)
	}
	return out
}

func (a *AutoScaling) expire(act *LifecycleAction) {
	if act.Result == "" && a.now().After(act.deadline) {
		act.Result = "timeout"
	}
}

func (a *AutoScaling) action(_ *http.Request, body []byte) string { return queryAction(body) }

func (a *AutoScaling) fail(w http.ResponseWriter, status int, code, msg string) {
	queryFail(w, asXmlns, status, code, msg)
}

const asXmlns = "http://autoscaling.amazonaws.com/doc/2011-01-01/"

func (a *AutoScaling) serve(w http.ResponseWriter, action string, p url.Values, _ []byte) {
	switch action {
	case "CompleteLifecycleAction", "RecordLifecycleActionHeartbeat":
		a.mu.Lock()
		act, ok := a.actions[p.Get("LifecycleActionToken")]
		if ok {
			a.expire(act)
		}
		if !ok || act.Result != "" || act.Group != p.Get("AutoScalingGroupName") || act.Hook != p.Get("LifecycleHookName") ||
			(p.Get("InstanceId") != "" && p.Get("InstanceId") != act.Instance) {
			a.mu.Unlock()
			a.fail(w, 400, "ValidationError", "No active Lifecycle Action found with token "+p.Get("LifecycleActionToken"))
			return
		}
		if action == "CompleteLifecycleAction" {
			r := p.Get("LifecycleActionResult")
			if r != "CONTINUE" && r != "ABANDON" {
				a.mu.Unlock()
				a.fail(w, 400, "ValidationError", fmt.Sprintf("Invalid LifecycleActionResult %q", r))
				return
			}
			act.Result = r
			act.Completions++
		} else {
			act.Heartbeats++
			act.deadline = a.now().Add(act.Timeout)
		}
		a.mu.Unlock()
		a.answer(w, action, "")
	case "DescribeAutoScalingGroups":
		a.mu.Lock()
		var b []byte
		for _, name := range members(p, "AutoScalingGroupNames") {
			ms, ok := a.groups[name]
			if !ok {
				continue
			}
			g := xmlGroup{Name: name}
			for _, m := range ms {
				g.Instances = append(g.Instances, xmlGroupInstance{ID: m.ID, State: m.State, Health: "Healthy", AZ: "us-east-1a"})
			}
			out, _ := xml.Marshal(g)
			b = append(b, out...)
		}
		a.mu.Unlock()
		a.answer(w, action, "<AutoScalingGroups>"+string(b)+"</AutoScalingGroups>")
	default:
		a.fail(w, 400, "InvalidAction", "The action "+action+" is not valid for this web service.")
	}
}

type xmlGroup struct {
	XMLName   xml.Name           `xml:"member"`
	Name      string             `xml:"AutoScalingGroupName"`
	Instances []xmlGroupInstance `xml:"Instances>member"`
}

type xmlGroupInstance struct {
	ID     string `xml:"InstanceId"`
	State  string `xml:"LifecycleState"`
	Health string `xml:"HealthStatus"`
	AZ     string `xml:"AvailabilityZone"`
}

func (a *AutoScaling) answer(w http.ResponseWriter, action, result string) {
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<%sResponse xmlns="%s"><%sResult>%s</%sResult><ResponseMetadata><RequestId>fake-request</RequestId></ResponseMetadata></%sResponse>`,
		action, asXmlns, action, result, action, action)
}
