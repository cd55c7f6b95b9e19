package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"

	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/testenv"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

// process is the dispatcher binary running as its own process.
type process struct {
	cmd  *exec.Cmd
	api  string
	logs *testenv.Buffer
	done chan struct{} // closed when the process has exited
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "webhook-dispatcher")
	cmd := exec.Command("go", "build", "-o", bin, "quarters.dev/services/webhook-dispatcher")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// runBinary starts the dispatcher and waits until its admin API answers.
// The ports come from freeAddr, so another socket of the machine may take
// one before the dispatcher binds it: a start that fails on that is
// retried on other ports.
func runBinary(t *testing.T, bin string, e env) *process {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p := startBinary(t, bin, e)
		deadline := time.Now().Add(60 * time.Second)
		for {
			select {
			case <-p.done:
				if attempt < 3 && strings.Contains(p.logs.String(), "address already in use") {
					break
				}
				t.Fatalf("dispatcher exited at start:\n%s", p.logs.String())
			default:
				if s, _ := p.admin(t, "GET", "/orgs/x/webhooks", ""); s == http.StatusNotFound {
					return p
				}
				if time.Now().After(deadline) {
					t.Fatalf("dispatcher did not answer within 60s:\n%s", p.logs.String())
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			break
		}
	}
}

func startBinary(t *testing.T, bin string, e env) *process {
	t.Helper()
	p := &process{api: freeAddr(t), logs: &testenv.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin)
	p.cmd.Env = append(os.Environ(),
		"QUARTERS_MONGO_URI="+e.mongoURI, "QUARTERS_MONGO_DATABASE="+e.database,
		"QUARTERS_KAFKA_BROKERS="+strings.Join(e.brokers, ","), "QUARTERS_KAFKA_TOPIC_PREFIX="+e.prefix,
		"QUARTERS_WEBHOOK_CONSUMER_GROUP="+e.prefix+"webhook-dispatcher",
		"QUARTERS_ADMIN_TOKEN="+adminToken,
		"QUARTERS_WEBHOOK_ALLOW_HTTP=true", "QUARTERS_WEBHOOK_ALLOW_PRIVATE=true",
		"QUARTERS_WEBHOOK_SCAN_INTERVAL=1s", "QUARTERS_WEBHOOK_INTERRUPTED_AFTER=12s",
		"QUARTERS_HTTP_ADDR="+p.api, "QUARTERS_OPS_ADDR="+freeAddr(t), "QUARTERS_LOG_LEVEL=warn")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		if t.Failed() {
			t.Logf("dispatcher log:\n%s", p.logs.String())
		}
	})
	return p
}

func (p *process) admin(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+p.api+"/admin/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

// TestKilledMidStream kills the dispatcher process (SIGKILL) while events
// stream in, starts it again, and checks that each event reached the
// receiver exactly once: nothing twice, nothing skipped, except an attempt
// cut by the kill itself, which is recorded as interrupted and not resent.
func TestKilledMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	e := stores(t)
	bin := buildBinary(t)
	p1 := runBinary(t, bin, e)

	w := extkafka.NewWriter(e.brokers)
	defer w.Close()
	publish := func(kind, key string, m proto.Message) {
		b, _ := proto.Marshal(m)
		// A broker may still be spreading a new topic's metadata: an
		// unknown topic is retried until the deadline.
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := w.WriteMessages(ctx, kafka.Message{Topic: e.prefix + kind, Key: []byte(key), Value: b})
			cancel()
			if err == nil {
				return
			}
			if !unknownTopic(err) || time.Now().After(deadline) {
				t.Errorf("publish: %v", err)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	org := "org_killtest"
	// The topics exist once the dispatcher has started.
	eventually(t, 60*time.Second, "dispatcher up", func() bool { s, _ := p1.admin(t, "GET", "/orgs/x/webhooks", ""); return s == 404 })
	publish("orgs", org, &eventsv1.OrgEvent{Envelope: envelope("org.created", org, org, 1, time.Now()), Org: &eventsv1.Org{Id: org}})

	var mu sync.Mutex
	var secret string
	got := map[string]int{} // reservation id → deliveries
	ids := map[string]int{} // delivery id → deliveries
	arrived := make(chan struct{}, 1<<12)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if !domain.VerifySignature(secret, raw, r.Header.Get("x-legacy-signature")) {
			t.Errorf("bad signature on %s", raw)
		}
		var b struct {
			ID   string            `json:"id"`
			Data map[string]string `json:"data"`
		}
		_ = json.Unmarshal(raw, &b)
		got[b.Data["reservationId"]]++
		ids[b.ID]++
		arrived <- struct{}{}
	}))
	defer recv.Close()
	var hookID string
	eventually(t, 60*time.Second, "org known", func() bool {
		s, body := p1.admin(t, "POST", "/orgs/"+org+"/webhooks", `{"url":"`+recv.URL+`"}`)
		if s != 201 {
			return false
		}
		mu.Lock()
		secret = obj(body["webhook"])["secret"].(string)
		mu.Unlock()
		hookID = obj(body["webhook"])["id"].(string)
		return true
	})

	const n = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			id := fmt.Sprint("r", i)
			publish("reservations", id, reservationCreated(org, id))
			time.Sleep(5 * time.Millisecond)
		}
	}()
	for range 20 {
		<-arrived
	}
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p1.done
	<-done
	p2 := runBinary(t, bin, e)

	interrupted := func() int {
		s, body := p2.admin(t, "GET", "/orgs/"+org+"/webhooks/"+hookID+"/deliveries?limit=100", "")
		if s != 200 {
			return 0
		}
		k := 0
		for _, d := range list(body["deliveries"]) {
			if obj(d)["reason"] == "interrupted" {
				k++
			}
		}
		return k
	}
	missing := func() int {
		mu.Lock()
		defer mu.Unlock()
		m := 0
		for i := range n {
			if got[fmt.Sprint("r", i)] == 0 {
				m++
			}
		}
		return m
	}
	eventually(t, 90*time.Second, "every reservation delivered or recorded as interrupted", func() bool {
		m := missing()
		return m == 0 || m <= interrupted()
	})
	time.Sleep(2 * time.Second) // room for a duplicate to show up
	mu.Lock()
	defer mu.Unlock()
	for id, c := range ids {
		if c != 1 {
			t.Errorf("delivery %s received %d times", id, c)
		}
	}
	for r, c := range got {
		if c != 1 {
			t.Errorf("reservation %s delivered %d times", r, c)
		}
	}
	t.Logf("%d of %d delivered; the kill interrupted %d attempt(s)", len(got), n, n-len(got))
}

// unknownTopic reports whether a write failed only because the broker did
// not know the topic yet.
func unknownTopic(err error) bool {
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if e != nil && !errors.Is(e, kafka.UnknownTopicOrPartition) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, kafka.UnknownTopicOrPartition)
}
