package awsfake

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SQS fakes a standard queue over SQS's JSON 1.0 protocol (X-Amz-Target: AmazonSQS.*):
// SendMessage, ReceiveMessage (long polling), DeleteMessage, ChangeMessageVisibility and
// GetQueueAttributes. It keeps real queue semantics: a received message is invisible for its
// visibility timeout and then delivered again with a new receipt handle and a higher
// ApproximateReceiveCount; a receipt handle is valid only while its delivery is in flight, so
// deleting or extending with an expired handle is rejected.
type SQS struct {
	mu     sync.Mutex
	base   string
	queues map[string]*queue
	nextID int
}

type queue struct {
	visibility time.Duration
	msgs       []*sqsMessage
}

type sqsMessage struct {
	id        string
	body      string
	receives  int
	visibleAt time.Time
	handle    string
	deleted   bool
	sentAt    time.Time
}

// SQS returns the server's SQS fake, registering it on first use.
func (s *Server) SQS() *SQS {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.services["sqs"].(*SQS); ok {
		return q
	}
	q := &SQS{base: s.srv.URL, queues: map[string]*queue{}}
	s.services["sqs"] = q
	return q
}

// CreateQueue creates a queue with a default visibility timeout and returns its URL.
func (q *SQS) CreateQueue(name string, visibility time.Duration) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	u := q.base + "/123456789012/" + name
	q.queues[u] = &queue{visibility: visibility}
	return u
}

// Send enqueues a message body and returns its ID.
func (q *SQS) Send(queueURL, body string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.send(q.queues[queueURL], body)
}

func (q *SQS) send(qu *queue, body string) string {
	q.nextID++
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", q.nextID)
	qu.msgs = append(qu.msgs, &sqsMessage{id: id, body: body, sentAt: time.Now()})
	return id
}

// QueueStats counts a queue's messages.
type QueueStats struct {
	Visible, InFlight, Deleted int
	// MaxReceives is the highest receive count of any message.
	MaxReceives int
}

// Stats counts the messages of a queue now.
func (q *SQS) Stats(queueURL string) QueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	var st QueueStats
	now := time.Now()
	for _, m := range q.queues[queueURL].msgs {
		st.MaxReceives = max(st.MaxReceives, m.receives)
		switch {
		case m.deleted:
			st.Deleted++
		case now.Before(m.visibleAt):
			st.InFlight++
		default:
			st.Visible++
		}
	}
	return st
}

func (q *SQS) action(r *http.Request, _ []byte) string {
	return strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
}

func (q *SQS) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-query-error", code+";Sender")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + code, "message": msg})
}

func (q *SQS) answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	json.NewEncoder(w).Encode(v)
}

type sqsRequest struct {
	QueueURL                    string   `json:"QueueUrl"`
	MessageBody                 string   `json:"MessageBody"`
	MaxNumberOfMessages         int      `json:"MaxNumberOfMessages"`
	VisibilityTimeout           *int     `json:"VisibilityTimeout"`
	WaitTimeSeconds             int      `json:"WaitTimeSeconds"`
	ReceiptHandle               string   `json:"ReceiptHandle"`
	AttributeNames              []string `json:"AttributeNames"`
	MessageSystemAttributeNames []string `json:"MessageSystemAttributeNames"`
}

func (q *SQS) serve(w http.ResponseWriter, action string, _ url.Values, body []byte) {
	var in sqsRequest
	if err := json.Unmarshal(body, &in); err != nil {
		q.fail(w, 400, "InvalidParameterValue", "body is not JSON: "+err.Error())
		return
	}
	q.mu.Lock()
	qu, ok := q.queues[in.QueueURL]
	q.mu.Unlock()
	if !ok {
		q.fail(w, 400, "QueueDoesNotExist", "The specified queue does not exist.")
		return
	}
	switch action {
	case "SendMessage":
		q.mu.Lock()
		id := q.send(qu, in.MessageBody)
		q.mu.Unlock()
		q.answer(w, map[string]string{"MessageId": id})
	case "ReceiveMessage":
		q.receive(w, qu, in)
	case "DeleteMessage", "ChangeMessageVisibility":
		q.mu.Lock()
		defer q.mu.Unlock()
		m := q.inFlight(qu, in.ReceiptHandle)
		if m == nil {
			if action == "DeleteMessage" {
				q.fail(w, 400, "ReceiptHandleIsInvalid", fmt.Sprintf("The receipt handle %q is not valid: the message was deleted or its visibility timeout expired.", in.ReceiptHandle))
			} else {
				q.fail(w, 400, "InvalidParameterValue", fmt.Sprintf("Value %s for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", in.ReceiptHandle))
			}
			return
		}
		if action == "DeleteMessage" {
			m.deleted = true

		} else {
			if in.VisibilityTimeout == nil || *in.VisibilityTimeout < 0 || *in.VisibilityTimeout > 43200 {
				q.fail(w, 400, "InvalidParameterValue", "VisibilityTimeout must be between 0 and 43200")
				return
			}
			m.visibleAt = time.Now().Add(time.Duration(*in.VisibilityTimeout) * time.Second)
		}
		q.answer(w, struct{}{})
	case "GetQueueAttributes":
		st := q.Stats(in.QueueURL)
		q.answer(w, map[string]map[string]string{"Attributes": {
			"ApproximateNumberOfMessages":           strconv.Itoa(st.Visible),
			"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(st.InFlight),
		}})
	default:
		q.fail(w, 400, "InvalidAction", "The action "+action+" is not valid for this endpoint.")
	}
}

// inFlight returns the message whose current delivery the handle names, while that delivery
// is still invisible to others.
func (q *SQS) inFlight(qu *queue, handle string) *sqsMessage {
	now := time.Now()
	for _, m := range qu.msgs {
		if !m.deleted && m.handle != "" && m.handle == handle && now.Before(m.visibleAt) {
			return m
		}
	}
	return nil
}

// receive answers at once when messages are visible, else waits up to WaitTimeSeconds.
func (q *SQS) receive(w http.ResponseWriter, qu *queue, in sqsRequest) {
	n := in.MaxNumberOfMessages
	if n == 0 {
		n = 1
	}
	if n < 1 || n > 10 || in.WaitTimeSeconds < 0 || in.WaitTimeSeconds > 20 {
		q.fail(w, 400, "InvalidParameterValue", "MaxNumberOfMessages must be 1 to 10 and WaitTimeSeconds 0 to 20")
		return
	}
	deadline := time.Now().Add(time.Duration(in.WaitTimeSeconds) * time.Second)
	for {
		q.mu.Lock()
		vt := qu.visibility
		if in.VisibilityTimeout != nil {
			vt = time.Duration(*in.VisibilityTimeout) * time.Second
		}
		now := time.Now()
		var out []map[string]any
		for _, m := range qu.msgs {
			if len(out) == n {
				break
			}
			if m.deleted || now.Before(m.visibleAt) {
				continue
			}
			m.receives++
			m.visibleAt = now.Add(vt)
			m.handle = newHandle()
			out = append(out, map[string]any{
				"MessageId": m.id, "ReceiptHandle": m.handle, "Body": m.body, "MD5OfBody": md5Hex(m.body),
				"Attributes": map[string]string{
					"ApproximateReceiveCount": strconv.Itoa(m.receives),
					"SentTimestamp":           strconv.FormatInt(m.sentAt.UnixMilli(), 10),
				},
			})
		}
		q.mu.Unlock()
		if len(out) > 0 || !time.Now().Before(deadline) {
			q.answer(w, map[string]any{"Messages": out})
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newHandle() string {
	b := make([]byte, 24)
	rand.Read(b)
	return "AQE" + hex.EncodeToString(b)
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
