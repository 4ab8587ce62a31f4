package hook

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/polygraph-dev/polygraph/internal/testkit"
)

func TestDecodeShapes(t *testing.T) {
	raw := testkit.Notification("store-web-prod", "polygraph-verify", "i-0abc", "tok-1", TransitionLaunching)
	quoted, _ := json.Marshal(raw)
	sns := `{"Type":"Notification","MessageId":"m-1","TopicArn":"arn:aws:sns:us-east-1:123456789012:asg","Subject":"Auto Scaling:  Lifecycle action 'LAUNCHING'","Message":` + string(quoted) + `,"Timestamp":"2026-11-30T12:00:00.000Z","SignatureVersion":"1","Signature":"x","SigningCertURL":"https://sns.example/cert.pem"}`
	want := Event{Transition: TransitionLaunching, Group: "store-web-prod", Hook: "polygraph-verify", InstanceID: "i-0abc", Token: "tok-1", Origin: "EC2", Destination: "AutoScalingGroup"}
	for _, c := range []struct{ name, body, shape string }{
		{"raw notification (SQS body)", raw, "notification"},
		{"EventBridge", testkit.EventBridge(raw), "eventbridge"},
		{"SNS envelope", sns, "sns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev, err := Decode([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Shape != c.shape {
				t.Fatalf("shape %q, want %q", ev.Shape, c.shape)
			}
			ev.Shape, ev.Region, ev.Time = "", "", want.Time
			if ev != want {
				t.Fatalf("got %+v\nwant %+v", ev, want)
			}
		})
	}
}

func TestDecodeRecords(t *testing.T) {
	raw := testkit.Notification("g", "h", "i-1", "tok", TransitionLaunching)
	body, _ := json.Marshal(raw)
	foreign, _ := json.Marshal(`{"hello":"world"}`)
	event := `{"Records":[{"messageId":"m1","receiptHandle":"r","body":` + string(body) + `,"eventSource":"aws:sqs"},` +
		`{"messageId":"m2","body":"not json"},{"messageId":"m3","body":` + string(foreign) + `}]}`
	if _, err := Decode([]byte(event)); !errors.Is(err, ErrRecords) {
		t.Fatalf("Decode of a Records event: %v, want ErrRecords", err)
	}
	recs, err := DecodeRecords([]byte(event))
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	if recs[0].Err != nil || recs[0].Event.InstanceID != "i-1" || recs[0].MessageID != "m1" {
		t.Fatalf("record 1: %+v", recs[0])
	}
	var de *DecodeError
	if !errors.As(recs[1].Err, &de) || de.Foreign {
		t.Fatalf("record 2 (malformed): %v", recs[1].Err)
	}
	if !errors.As(recs[2].Err, &de) || !de.Foreign {
		t.Fatalf("record 3 (foreign): %v", recs[2].Err)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range []struct {
		name, body, msg string
		foreign         bool
	}{
		{"not JSON", "hello", "not a JSON object", false},
		{"another service's EventBridge event", `{"detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{}}`, "not an Auto Scaling lifecycle action", true},
		{"a launch notification, not an action", `{"Event":"autoscaling:EC2_INSTANCE_LAUNCH","AutoScalingGroupName":"g"}`, "not a lifecycle action", true},
		{"no token", strings.Replace(testkit.Notification("g", "h", "i-1", "", TransitionLaunching), `"LifecycleActionToken":""`, `"X":""`, 1), "without LifecycleActionToken", false},
		{"over the size limit", `{"a":"` + strings.Repeat("x", MaxEventBytes) + `"}`, "over the", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.body))
			var de *DecodeError
			if !errors.As(err, &de) || de.Foreign != c.foreign || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v (foreign %v), want ~%q foreign %v", err, de != nil && de.Foreign, c.msg, c.foreign)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	raw := testkit.Notification("g", "h", "i-1", "tok", TransitionLaunching)
	f.Add([]byte(raw))
	f.Add([]byte(testkit.EventBridge(raw)))
	f.Add([]byte(`{"Type":"Notification","Message":"{}"}`))
	f.Add([]byte(`{"Records":[{"body":"{}"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Decode(data)
		if err == nil && !ev.Test && (ev.Token == "" || ev.InstanceID == "" || ev.Group == "" || ev.Hook == "") {
			t.Fatalf("decoded an action without its identity: %+v", ev)
		}
		DecodeRecords(data)
	})
}
