package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Lifecycle transitions and the test notification's event name.
const (
	TransitionLaunching   = "autoscaling:EC2_INSTANCE_LAUNCHING"
	TransitionTerminating = "autoscaling:EC2_INSTANCE_TERMINATING"
	TestNotification      = "autoscaling:TEST_NOTIFICATION"
)

// Origins and destinations of a transition.
const (
	PlaceEC2      = "EC2"
	PlaceGroup    = "AutoScalingGroup"
	PlaceWarmPool = "WarmPool"
)

// MaxEventBytes caps an event read from a file, stdin or a queue message.
const MaxEventBytes = 1 << 20

// Event is one lifecycle action (or the test notification Auto Scaling sends when a hook's
// notification target is set up), whatever shape it arrived in.
type Event struct {
	// Test is true for autoscaling:TEST_NOTIFICATION; nothing else is set then but Group.
	Test bool `json:"test,omitempty"`
	// Transition is autoscaling:EC2_INSTANCE_LAUNCHING or autoscaling:EC2_INSTANCE_TERMINATING.
	Transition string `json:"transition,omitempty"`
	Group      string `json:"group"`
	Hook       string `json:"hook,omitempty"`
	InstanceID string `json:"instance,omitempty"`
	// Token is the LifecycleActionToken CompleteLifecycleAction must carry.
	Token string `json:"-"`
	// Origin and Destination are EC2, AutoScalingGroup or WarmPool; empty in events from
	// before warm pools, which are fresh launches.
	Origin      string    `json:"origin,omitempty"`
	Destination string    `json:"destination,omitempty"`
	Region      string    `json:"region,omitempty"`
	Time        time.Time `json:"time,omitzero"`
	// Shape says how it arrived: eventbridge, notification (the raw body Auto Scaling sends
	// to SQS) or sns.
	Shape string `json:"shape"`
}

// Launching reports whether the event is a launching transition.
func (e Event) Launching() bool { return e.Transition == TransitionLaunching }

// IntoWarmPool reports whether a launching instance goes into the warm pool rather than into
// service.
func (e Event) IntoWarmPool() bool { return e.Destination == PlaceWarmPool }

// FromWarmPool reports whether a launching instance leaves the warm pool for the group.
func (e Event) FromWarmPool() bool {
	return e.Origin == PlaceWarmPool && (e.Destination == PlaceGroup || e.Destination == "")
}

// DecodeError says why bytes are not a lifecycle event. Foreign is true when they are valid
// JSON of another kind (another service's event, another Auto Scaling notification).
type DecodeError struct {
	Foreign bool
	Msg     string
}

func (e *DecodeError) Error() string { return e.Msg }

// ErrRecords is returned by Decode for a Lambda SQS event: it holds several messages, which
// DecodeRecords splits.
var ErrRecords = errors.New("a Lambda SQS event (Records) holds messages, not one event")

// notification is the body Auto Scaling sends to SQS or SNS, and the detail of its
// EventBridge event: the same field names in all three.
type notification struct {
	Origin               string `json:"Origin"`
	Destination          string `json:"Destination"`
	LifecycleHookName    string `json:"LifecycleHookName"`
	LifecycleTransition  string `json:"LifecycleTransition"`
	AutoScalingGroupName string `json:"AutoScalingGroupName"`
	EC2InstanceID        string `json:"EC2InstanceId"`
	LifecycleActionToken string `json:"LifecycleActionToken"`
	Event                string `json:"Event"`
	Service              string `json:"Service"`
	Time                 string `json:"Time"`
}

// probeShape holds the keys that tell the shapes apart.
type probeShape struct {
	Records    json.RawMessage `json:"Records"`
	DetailType *string         `json:"detail-type"`
	Type       string          `json:"Type"`
	Message    *string         `json:"Message"`
}

// Decode reads one lifecycle event: an EventBridge event, the raw notification body, or an
// SNS envelope around it. A Lambda SQS event gives ErrRecords.
func Decode(data []byte) (Event, error) {
	data = bytes.TrimSpace(data)
	if len(data) > MaxEventBytes {
		return Event{}, &DecodeError{Msg: fmt.Sprintf("event of %d bytes is over the %d byte limit", len(data), MaxEventBytes)}
	}
	var p probeShape
	if err := json.Unmarshal(data, &p); err != nil {
		return Event{}, &DecodeError{Msg: "not a JSON object: " + err.Error()}
	}
	switch {
	case p.Records != nil:
		return Event{}, ErrRecords
	case p.DetailType != nil:
		return decodeEventBridge(data)
	case p.Type == "Notification" && p.Message != nil:
		var env events.SNSEntity
		if err := json.Unmarshal(data, &env); err != nil {
			return Event{}, &DecodeError{Msg: "reading the SNS envelope: " + err.Error()}
		}
		ev, err := decodeNotification([]byte(env.Message))
		ev.Shape = "sns"
		return ev, err
	}
	return decodeNotification(data)
}

func decodeEventBridge(data []byte) (Event, error) {
	var e events.EventBridgeEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, &DecodeError{Msg: "reading the EventBridge event: " + err.Error()}
	}
	if e.Source != "aws.autoscaling" || !strings.Contains(e.DetailType, "Lifecycle Action") {
		return Event{}, &DecodeError{Foreign: true, Msg: fmt.Sprintf("EventBridge event %q from %q is not an Auto Scaling lifecycle action", e.DetailType, e.Source)}
	}
	var n notification
	if err := json.Unmarshal(e.Detail, &n); err != nil {
		return Event{}, &DecodeError{Msg: "reading the EventBridge event's detail: " + err.Error()}
	}
	ev, err := fromNotification(n)
	ev.Shape, ev.Region, ev.Time = "eventbridge", e.Region, e.Time
	return ev, err
}

func decodeNotification(data []byte) (Event, error) {
	var n notification
	if err := json.Unmarshal(data, &n); err != nil {
		return Event{Shape: "notification"}, &DecodeError{Msg: "not a JSON object: " + err.Error()}
	}
	ev, err := fromNotification(n)
	ev.Shape = "notification"
	if t, perr := time.Parse(time.RFC3339, n.Time); perr == nil {
		ev.Time = t
	}
	return ev, err
}

func fromNotification(n notification) (Event, error) {
	if n.Event == TestNotification {
		return Event{Test: true, Group: n.AutoScalingGroupName}, nil
	}
	ev := Event{
		Transition: n.LifecycleTransition, Group: n.AutoScalingGroupName, Hook: n.LifecycleHookName,
		InstanceID: n.EC2InstanceID, Token: n.LifecycleActionToken, Origin: n.Origin, Destination: n.Destination,
	}
	if ev.Transition != TransitionLaunching && ev.Transition != TransitionTerminating {
		if ev.Transition == "" && n.Event == "" {
			return ev, &DecodeError{Foreign: true, Msg: "not an Auto Scaling lifecycle notification (no LifecycleTransition)"}
		}
		return ev, &DecodeError{Foreign: true, Msg: fmt.Sprintf("not a lifecycle action: transition %q, event %q", ev.Transition, n.Event)}
	}
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"AutoScalingGroupName", ev.Group}, {"LifecycleHookName", ev.Hook},
		{"EC2InstanceId", ev.InstanceID}, {"LifecycleActionToken", ev.Token},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return ev, &DecodeError{Msg: "lifecycle action without " + strings.Join(missing, ", ")}
	}
	return ev, nil
}

// Record is one message of a Lambda SQS event, decoded.
type Record struct {
	MessageID string
	Event     Event
	// Err is set when the body is not a lifecycle event (a *DecodeError).
	Err error
}

// DecodeRecords splits a Lambda SQS event into its messages and decodes each body. The error
// is for bytes that are not an SQS event at all.
func DecodeRecords(data []byte) ([]Record, error) {
	var e events.SQSEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, &DecodeError{Msg: "reading the SQS event: " + err.Error()}
	}
	out := make([]Record, len(e.Records))
	for i, m := range e.Records {
		out[i].MessageID = m.MessageId
		out[i].Event, out[i].Err = Decode([]byte(m.Body))
		if errors.Is(out[i].Err, ErrRecords) {
			out[i].Err = &DecodeError{Foreign: true, Msg: "an SQS message holding an SQS event"}
		}
	}
	return out, nil
}
