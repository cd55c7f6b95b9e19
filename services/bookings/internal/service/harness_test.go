package service_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/testenv"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/bookings/internal/service"
)

const adminToken = "test-admin-token"

type harness struct {
	t       *testing.T
	api     http.Handler
	cfg     *service.Config
	reg     *prometheus.Registry
	rdb     *redis.Client
	tokens  *authn.Store
	writer  *kafka.Writer
	smtp    *smtpServer
	version map[string]int64
	mu      sync.Mutex
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// start runs the bookings service against the real stores, with an SMTP
// server of the test's own.
func start(t *testing.T) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	mail := startSMTP(t)
	cfg := &service.Config{
		AdminToken: adminToken, SMTPURL: "smtp://" + mail.addr, SMTPFrom: "Quarters <no-reply@quarters.invalid>",
		SMTPTimeout: 5 * time.Second, DashboardURL: "https://dashboard.example/app/", InquiryWindow: 24 * time.Hour,
		ProjectionWait: 3 * time.Second, MailInterval: 200 * time.Millisecond,
	}
	cfg.Mongo.URI = testenv.MongoURI(t)
	cfg.Mongo.Database = testenv.Database(t)
	cfg.Kafka.Brokers, cfg.Kafka.TopicPrefix = testenv.KafkaBrokers(t), testenv.TopicPrefix(t)
	cfg.Redis.URL = testenv.RedisURL(t)
	reg := prometheus.NewRegistry()
	rt := &bootstrap.Runtime{Name: "bookings", Log: slog.New(slog.DiscardHandler), Registry: reg}
	app, err := service.Build(cfg)(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	workCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range app.Workers {
		wg.Go(func() { _ = w(workCtx) })
	}
	opts, _ := redis.ParseURL(cfg.Redis.URL)
	rdb := redis.NewClient(opts)
	h := &harness{t: t, api: app.API, cfg: cfg, reg: reg, rdb: rdb, tokens: authn.NewStore(rdb),
		writer: extkafka.NewWriter(cfg.Kafka.Brokers), smtp: mail, version: map[string]int64{}}
	t.Cleanup(func() {
		stop()
		wg.Wait()
		for _, c := range app.Closers {
			_ = c(context.Background())
		}
		h.writer.Close()
		h.tokens.Close()
		rdb.Close()
	})
	return h
}

type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (h *harness) do(method, path, body string, hdr ...string) resp {
	h.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.api.ServeHTTP(w, req)
	raw, _ := io.ReadAll(w.Body)
	r := resp{status: w.Code, header: w.Header(), raw: string(raw)}
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

// public calls the public API as the org's integrator.
func (h *harness) public(token, method, path, body string) resp {
	h.t.Helper()
	return h.do(method, "/api/v1"+path, body, "Authorization", "Bearer "+token)
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// token mints an access token of a new credential set of orgID.
func (h *harness) token(orgID string) string {
	h.t.Helper()
	ctx := context.Background()
	id := authn.NewClientID()
	_, hash := authn.NewSecret()
	if err := h.tokens.PutCredential(ctx, id, orgID, hash); err != nil {
		h.t.Fatal(err)
	}
	tok, err := h.tokens.Mint(ctx, authn.Principal{OrgID: orgID, ClientID: id})
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

func (h *harness) nextVersion(id string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.version[id]++
	return h.version[id]
}

func (h *harness) publish(topic, key string, m proto.Message) {
	h.t.Helper()
	v, err := proto.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.writer.WriteMessages(context.Background(), kafka.Message{Topic: h.cfg.Kafka.Topic(topic), Key: []byte(key), Value: v}); err != nil {
		h.t.Fatal(err)
	}
}

func envelope(typ, orgID, id string, version int64) *eventsv1.Envelope {
	return &eventsv1.Envelope{EventId: randomHex(8), Type: typ, OrgId: orgID, AggregateId: id, AggregateVersion: version, OccurredAt: timestamppb.Now()}
}

// org announces an org through an org event and waits until bookings know
// it.
func (h *harness) org(limit int32) string {
	h.t.Helper()
	id := "org_" + randomHex(6)
	h.putOrg(id, limit)
	h.eventually("org "+id+" known", func() bool {
		return h.admin("GET", "/orgs/"+id+"/inquiries", "").status == 200
	})
	return id
}

func (h *harness) putOrg(id string, limit int32) {
	h.publish("orgs", id, &eventsv1.OrgEvent{
		Envelope: envelope("org.updated", id, id, h.nextVersion(id)),
		Org:      &eventsv1.Org{Id: id, Name: "Org " + id, ContractProvider: eventsv1.ContractProvider_CONTRACT_PROVIDER_QUARTERS, InquiryDailyLimit: limit},
	})
}

func i64(v int64) *int64   { return &v }
func str(s string) *string { return &s }

// listing publishes a listing of orgID at a monthly rate.
func (h *harness) listing(orgID, nickname string, rent int64) string {
	id := "lst_" + randomHex(6)
	h.publishListing(orgID, id, nickname, rent)
	return id
}

func (h *harness) publishListing(orgID, id, nickname string, rent int64) {
	h.t.Helper()
	h.publish("listings", id, &eventsv1.ListingEvent{
		Envelope: envelope("listing.updated", orgID, id, h.nextVersion(id)),
		Listing: &eventsv1.Listing{Id: id, OrgId: orgID, Slug: strings.ToLower(strings.ReplaceAll(nickname, " ", "-")), Nickname: nickname,
			Address:  &eventsv1.Address{Street: str("Prinsengracht 1"), PostalCode: str("1015 DV"), City: "Amsterdam", Country: "NL", Area: str("Jordaan")},
			Timezone: "Europe/Amsterdam", OwnerName: "Anna Owner",
			Pricing: &eventsv1.ListingPricing{Currency: "EUR", MonthlyRateCents: i64(rent), UtilitiesCents: i64(15000),
				FurnitureCents: i64(5000), DepositCents: i64(2 * rent), RateBasis: eventsv1.RateBasis_RATE_BASIS_MONTHLY}},
	})
}

func (h *harness) unpublish(orgID, id string) {
	h.publish("listings", id, &eventsv1.ListingEvent{
		Envelope: envelope("listing.deleted", orgID, id, h.nextVersion(id)),
		Listing:  &eventsv1.Listing{Id: id, OrgId: orgID},
	})
}

// projected waits until the bookings service's projection holds listing id
// as published or not.
func (h *harness) projected(id string, published bool) {
	h.t.Helper()
	cl, err := mongo.Connect(options.Client().ApplyURI(h.cfg.Mongo.URI))
	if err != nil {
		h.t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	props := cl.Database(h.cfg.Mongo.Database).Collection("properties")
	h.eventually("listing "+id+" projected", func() bool {
		var d struct {
			Published bool `bson:"published"`
		}
		err := props.FindOne(context.Background(), bson.D{{Key: "_id", Value: id}}).Decode(&d)
		return err == nil && d.Published == published
	})
}

// eventually polls cond for up to 20 s.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// events reads every message on one of the service's topics so far.
func (h *harness) events(kind string, want int) []kafka.Message {
	h.t.Helper()
	topic := h.cfg.Kafka.Topic(kind)
	var out []kafka.Message
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out = out[:0]
		conn, err := kafka.Dial("tcp", h.cfg.Kafka.Brokers[0])
		if err != nil {
			h.t.Fatal(err)
		}
		parts, err := conn.ReadPartitions(topic)
		conn.Close()
		if err != nil {
			h.t.Fatal(err)
		}
		for _, p := range parts {
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: h.cfg.Kafka.Brokers, Topic: topic, Partition: p.ID, MaxWait: 100 * time.Millisecond})
			last, err := r.ReadLag(context.Background())
			if err == nil && last > 0 {
				for range last {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					m, err := r.ReadMessage(ctx)
					cancel()
					if err != nil {
						break
					}
					out = append(out, m)
				}
			}
			r.Close()
		}
		if len(out) >= want {
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
	h.t.Fatalf("%s: %d events, want %d", kind, len(out), want)
	return nil
}

// smtpServer is a minimal SMTP receiver that keeps every message.
type smtpServer struct {
	addr string
	l    net.Listener
	mu   sync.Mutex
	msgs []string
	// refuse makes DATA answer a temporary failure while true.
	refuse bool
}

func startSMTP(t *testing.T) *smtpServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{addr: l.Addr().String(), l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.session(c)
		}
	}()
	return s
}

func (s *smtpServer) session(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(l string) { _, _ = io.WriteString(c, l+"\r\n") }
	say("220 test")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		verb := strings.ToUpper(strings.Fields(line + " x")[0])
		switch verb {
		case "EHLO", "HELO":
			say("250 test")
		case "MAIL", "RCPT", "RSET", "NOOP":
			say("250 ok")
		case "DATA":
			s.mu.Lock()
			refuse := s.refuse
			s.mu.Unlock()
			if refuse {
				say("451 try later")
				continue
			}
			say("354 go")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, b.String())
			s.mu.Unlock()
			say("250 queued")
		case "QUIT":
			say("221 bye")
			return
		default:
			say("502 no")
		}
	}
}

func (s *smtpServer) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

func (s *smtpServer) setRefuse(v bool) {
	s.mu.Lock()
	s.refuse = v
	s.mu.Unlock()
}

// must finds a metric by name in reg.
func must(reg *prometheus.Registry, name string) prometheus.Collector {
	return metricByName{reg: reg, name: name}
}

type metricByName struct {
	reg  *prometheus.Registry
	name string
}

func (m metricByName) Describe(ch chan<- *prometheus.Desc) {}
func (m metricByName) Collect(ch chan<- prometheus.Metric) {
	mfs, _ := m.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != m.name {
			continue
		}
		for _, mm := range mf.GetMetric() {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(m.name, "", nil, nil), prometheus.CounterValue, mm.GetCounter().GetValue())
		}
	}
}
