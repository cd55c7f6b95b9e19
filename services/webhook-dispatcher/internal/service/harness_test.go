package service_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extkafka"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/webhook-dispatcher/internal/domain"
	"quarters.dev/services/webhook-dispatcher/internal/service"
)

const adminToken = "test-admin-token"

// env is one test's stores: its own database and topic prefix.
type env struct {
	mongoURI, database string
	brokers            []string
	prefix             string
}

// harness runs the dispatcher as the process would: Build, workers, closers.
type harness struct {
	t        *testing.T
	env      env
	cfg      *service.Config
	api      http.Handler
	registry *prometheus.Registry
	stop     func()
	writer   *kafka.Writer
}

func testConfig(e env) *service.Config {
	cfg := &service.Config{
		AdminToken: adminToken,
		// A group of its own: tests running side by side never rebalance
		// each other's consumers.
		ConsumerGroup:          e.prefix + "webhook-dispatcher",
		HeaderPrefix:           "legacy",
		AllowPrivate:           true,
		Timeout:                10 * time.Second,
		MaxInflight:            64,
		MaxInflightPerEndpoint: 4,
		QueueSize:              1000,
		ScanInterval:           time.Second,
		InterruptedAfter:       time.Minute,
		RootCAs:                testCA(),
	}
	cfg.Mongo.URI, cfg.Mongo.Database = e.mongoURI, e.database
	cfg.Kafka.Brokers, cfg.Kafka.TopicPrefix = e.brokers, e.prefix
	return cfg
}

// testCA trusts the certificate every httptest TLS server presents.
func testCA() *x509.CertPool {
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	defer srv.Close()
	p := x509.NewCertPool()
	p.AddCert(srv.Certificate())
	return p
}

func start(t *testing.T, e env, cfg *service.Config) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	rt := &bootstrap.Runtime{Name: "webhook-dispatcher", Log: slog.New(slog.DiscardHandler), Registry: reg}
	app, err := service.Build(cfg)(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	workCtx, cancelWork := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range app.Workers {
		wg.Go(func() {
			if err := w(workCtx); err != nil && workCtx.Err() == nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	h := &harness{t: t, env: e, cfg: cfg, api: app.API, registry: reg, writer: extkafka.NewWriter(e.brokers)}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancelWork()
			wg.Wait()
			for _, c := range app.Closers {
				_ = c(context.Background())
			}
		})
	}
	t.Cleanup(func() { h.stop(); h.writer.Close() })
	return h
}

type resp struct {
	status int
	body   map[string]any
	raw    string
}

func (h *harness) do(method, path, body string, hdr ...string) resp {
	h.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.api.ServeHTTP(w, req)
	raw, _ := io.ReadAll(w.Body)
	r := resp{status: w.Code, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		h.t.Errorf("%s %s: Cache-Control %q", method, path, got)
	}
	return r
}

func (h *harness) admin(method, path, body string) resp {
	h.t.Helper()
	return h.do(method, "/admin/v1"+path, body, "Authorization", "Bearer "+adminToken)
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func list(v any) []any         { l, _ := v.([]any); return l }

// publish writes domain events as their producers do.
func (h *harness) publish(kind string, key string, msgs ...proto.Message) {
	h.t.Helper()
	var out []kafka.Message
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, kafka.Message{Topic: h.env.prefix + kind, Key: []byte(key), Value: b})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.writer.WriteMessages(ctx, out...); err != nil {
		h.t.Fatalf("publish %s: %v", kind, err)
	}
}

func envelope(typ, orgID, aggregateID string, version int64, at time.Time) *eventsv1.Envelope {
	return &eventsv1.Envelope{EventId: uuid.NewString(), Type: typ, OrgId: orgID, AggregateId: aggregateID, AggregateVersion: version, OccurredAt: timestamppb.New(at)}
}

// newOrg announces an org on the org topic and waits until the dispatcher
// knows it.
func (h *harness) newOrg() string {
	h.t.Helper()
	id := "org_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	h.publish("orgs", id, &eventsv1.OrgEvent{Envelope: envelope("org.created", id, id, 1, time.Now()), Org: &eventsv1.Org{Id: id, Name: "Test"}})
	eventually(h.t, 30*time.Second, "org "+id+" known", func() bool {
		return h.admin("GET", "/orgs/"+id+"/webhooks", "").status == 200
	})
	return id
}

// register adds a webhook for url and returns its id and secret.
func (h *harness) register(orgID, url string) (string, string) {
	h.t.Helper()
	r := h.admin("POST", "/orgs/"+orgID+"/webhooks", `{"url":"`+url+`"}`)
	if r.status != 201 {
		h.t.Fatalf("register %s: %d %s", url, r.status, r.raw)
	}
	w := obj(r.body["webhook"])
	return w["id"].(string), w["secret"].(string)
}

func (h *harness) deliveries(orgID, webhookID string) []map[string]any {
	h.t.Helper()
	r := h.admin("GET", "/orgs/"+orgID+"/webhooks/"+webhookID+"/deliveries?limit=100", "")
	if r.status != 200 {
		h.t.Fatalf("deliveries: %d %s", r.status, r.raw)
	}
	var out []map[string]any
	for _, d := range list(r.body["deliveries"]) {
		out = append(out, obj(d))
	}
	return out
}

// finished waits until n delivery rows of a webhook have an outcome.
func (h *harness) finished(orgID, webhookID string, n int) []map[string]any {
	h.t.Helper()
	var rows []map[string]any
	eventually(h.t, 60*time.Second, fmt.Sprintf("%d finished deliveries", n), func() bool {
		rows = h.deliveries(orgID, webhookID)
		done := 0
		for _, r := range rows {
			if r["outcome"] != "pending" {
				done++
			}
		}
		return done >= n
	})
	return rows
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// receiver is a real HTTPS receiver that checks every request as an
// integrator's would: it verifies the signature over the raw body.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	got    []delivered
	signal chan struct{}
	// hold, when set, runs before the answer (a slow receiver).
	hold func(r *http.Request)
}

type delivered struct {
	ID, Event string
	Body      []byte
	Data      map[string]any
	Header    http.Header
	At        time.Time
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, signal: make(chan struct{}, 1<<16)}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	at := time.Now()
	r.mu.Lock()
	secret := r.secret
	r.mu.Unlock()
	if !domain.VerifySignature(secret, raw, req.Header.Get("x-legacy-signature")) {
		r.t.Errorf("signature %q does not verify over %s", req.Header.Get("x-legacy-signature"), raw)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var env struct {
		ID        string         `json:"id"`
		Event     string         `json:"event"`
		CreatedAt string         `json:"createdAt"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		r.t.Errorf("body %s: %v", raw, err)
	}
	if env.ID != req.Header.Get("x-legacy-delivery") || env.Event != req.Header.Get("x-legacy-event") || req.Header.Get("Content-Type") != "application/json" {
		r.t.Errorf("headers %v do not match body %s", req.Header, raw)
	}
	if _, err := time.Parse(time.RFC3339, env.CreatedAt); err != nil || !strings.HasSuffix(env.CreatedAt, "Z") {
		r.t.Errorf("createdAt %q", env.CreatedAt)
	}
	if r.hold != nil {
		r.hold(req)
	}
	r.mu.Lock()
	r.got = append(r.got, delivered{ID: env.ID, Event: env.Event, Body: raw, Data: env.Data, Header: req.Header.Clone(), At: at})
	r.mu.Unlock()
	r.signal <- struct{}{}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	r.secret = s
	r.mu.Unlock()
}

func (r *receiver) received() []delivered {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivered(nil), r.got...)
}

// wait waits for n deliveries in all.
func (r *receiver) wait(n int, within time.Duration) []delivered {
	r.t.Helper()
	deadline := time.After(within)
	for len(r.received()) < n {
		select {
		case <-r.signal:
		case <-deadline:
			r.t.Fatalf("receiver got %d deliveries, want %d", len(r.received()), n)
		}
	}
	return r.received()
}

// metric returns the value of a counter or gauge series of h's registry
// whose labels have the given values (in the metric's label order).
func (h *harness) metric(name string, labelValues ...string) float64 {
	h.t.Helper()
	families, err := h.registry.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labelValues) {
				continue
			}
			for i, l := range m.GetLabel() {
				if l.GetValue() != labelValues[i] {
					continue series
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
