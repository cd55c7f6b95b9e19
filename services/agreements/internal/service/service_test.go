package service_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"quarters.dev/pkg/authn"
	"quarters.dev/pkg/bootstrap"
	"quarters.dev/pkg/extkafka"
	"quarters.dev/pkg/extredis"
	eventsv1 "quarters.dev/proto-events/gen/eventsv1"
	"quarters.dev/services/agreements/internal/app"
	"quarters.dev/services/agreements/internal/service"
)

const adminToken = "test-admin-token"

type harness struct {
	t      *testing.T
	srv    *httptest.Server
	cfg    *service.Config
	db     *mongo.Database
	writer *kafka.Writer
	tokens *authn.Store
}

func start(t *testing.T) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cfg := &service.Config{AdminToken: adminToken, ConsumerGroup: "agreements", DocumentOrphanAge: time.Hour}
	stores(t, cfg)
	rt := &bootstrap.Runtime{Name: "agreements", Log: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()}
	a, err := service.Build(cfg)(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	workCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range a.Workers {
		wg.Go(func() { _ = w(workCtx) })
	}
	srv := httptest.NewServer(a.API)
	client, err := mongo.Connect(options.Client().ApplyURI(cfg.Mongo.URI))
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := extredis.Connect(ctx, cfg.Redis.URL)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, cfg: cfg, db: client.Database(cfg.Mongo.DatabaseFor("agreements")),
		writer: extkafka.NewWriter(cfg.Kafka.Brokers), tokens: authn.NewStore(rdb)}
	t.Cleanup(func() {
		srv.Close()
		stop()
		wg.Wait()
		for _, c := range a.Closers {
			_ = c(context.Background())
		}
		_ = h.writer.Close()
		_ = h.tokens.Close()
		_ = rdb.Close()
		_ = client.Disconnect(context.Background())
	})
	return h
}

// org announces an org with its contract provider, as the auth service does,
// and returns HTTP Basic credentials of a set of it.
func (h *harness) org(id string, provider eventsv1.ContractProvider, version int64) string {
	h.t.Helper()
	h.publish(h.cfg.Kafka.Topic("orgs"), id, &eventsv1.OrgEvent{
		Envelope: &eventsv1.Envelope{EventId: fmt.Sprint(id, version), Type: "org.updated", OrgId: id, AggregateId: id, AggregateVersion: version, OccurredAt: timestamppb.Now()},
		Org:      &eventsv1.Org{Id: id, Name: id, ContractProvider: provider},
	})
	clientID := authn.NewClientID()
	secret, hash := authn.NewSecret()
	if err := h.tokens.PutCredential(context.Background(), clientID, id, hash); err != nil {
		h.t.Fatal(err)
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(clientID+":"+secret))
}

// reservation announces a booking, as the bookings service does.
func (h *harness) reservation(id, orgID, eventType string, version int64) {
	h.t.Helper()
	h.publish(h.cfg.Kafka.Topic("reservations"), id, &eventsv1.ReservationEvent{
		Envelope:    &eventsv1.Envelope{EventId: fmt.Sprint(id, version), Type: eventType, OrgId: orgID, AggregateId: id, AggregateVersion: version, OccurredAt: timestamppb.Now()},
		Reservation: &eventsv1.Reservation{Id: id, OrgId: orgID, PropertyId: "prop_" + id, Status: eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED},
	})
}

func (h *harness) publish(topic, key string, m proto.Message) {
	h.t.Helper()
	v, err := proto.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.writer.WriteMessages(context.Background(), kafka.Message{Topic: topic, Key: []byte(key), Value: v}); err != nil {
		h.t.Fatal(err)
	}
}

type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (h *harness) do(method, path, auth, contentType string, body io.Reader) resp {
	h.t.Helper()
	req, err := http.NewRequest(method, h.srv.URL+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{status: res.StatusCode, header: res.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		h.t.Errorf("%s %s: Cache-Control %q", method, path, cc)
	}
	return r
}

func (h *harness) put(auth, resID, body string) resp {
	h.t.Helper()
	return h.do("PUT", "/api/v1/reservations/"+resID+"/agreement", auth, "application/json", strings.NewReader(body))
}

func (h *harness) admin(method, path, body string) resp {
	h.t.Helper()
	return h.do(method, "/admin/v1"+path, "Bearer "+adminToken, "application/json", strings.NewReader(body))
}

// waitFor polls GET agreement until the projections know the reservation and
// the org's provider is applied (an external org's report is accepted or a
// quarters org's is refused with 409).
func (h *harness) waitFor(auth, resID string, want int) {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := h.do("GET", "/api/v1/reservations/"+resID+"/agreement", auth, "", nil)
		if r.status == want {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("reservation %s: GET agreement %d %s, want %d", resID, r.status, r.raw, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready publishes an external org and a reservation of it and waits until
// both projections hold them.
func (h *harness) ready(orgID, resID string, provider eventsv1.ContractProvider) string {
	h.t.Helper()
	auth := h.org(orgID, provider, 1)
	h.reservation(resID, orgID, "reservation.created", 1)
	h.waitFor(auth, resID, 200)
	// The org topic is read by the same consumer; wait for its provider too.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var d struct {
			Provider string `bson:"provider"`
		}
		err := h.db.Collection("orgs").FindOne(context.Background(), bson.D{{Key: "_id", Value: orgID}}).Decode(&d)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("org %s never projected: %v", orgID, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return auth
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func TestReportsAndReads(t *testing.T) {
	t.Parallel()
	h := start(t)
	auth := h.ready("org_ext", "res_1", eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL)

	if r := h.do("GET", "/api/v1/reservations/res_1/agreement", auth, "", nil); r.status != 200 || string(r.raw) != `{"agreement":null}` {
		t.Fatalf("no agreement yet: %d %s", r.status, r.raw)
	}
	r := h.put(auth, "res_1", `{"externalId":"env-1","status":"sent","documentUrl":"https://esign.example/env-1",
		"signers":[{"role":"lessee","name":"Ann","email":"ann@example.com","signingUrl":"https://esign.example/s/1"},{"role":"lessor"}]}`)
	if r.status != 201 {
		t.Fatalf("first report: %d %s", r.status, r.raw)
	}
	a := obj(r.body["agreement"])
	for _, f := range []string{"id", "version", "provider", "externalId", "status", "templateName", "sentAt", "completedAt",
		"declinedAt", "voidedAt", "error", "documentUrl", "document", "signers", "createdAt", "updatedAt"} {
		if _, ok := a[f]; !ok {
			t.Errorf("agreement lacks %s: %s", f, r.raw)
		}
	}
	signer := obj(a["signers"].([]any)[0])
	if a["provider"] != "external" || a["version"] != 1.0 || signer["signingUrl"] != "https://esign.example/s/1" ||
		a["documentUrl"] != "https://esign.example/env-1" || !strings.HasSuffix(a["sentAt"].(string), "Z") {
		t.Fatalf("first report body: %s", r.raw)
	}
	if r := h.put(auth, "res_1", `{"externalId":"env-1","status":"completed","signers":[{"role":"lessee","status":"completed"}]}`); r.status != 200 ||
		obj(r.body["agreement"])["status"] != "completed" || len(obj(r.body["agreement"])["signers"].([]any)) != 2 {
		t.Fatalf("in-place update: %d %s", r.status, r.raw)
	}
	if r := h.do("GET", "/api/v1/reservations/res_1/agreement", auth, "", nil); r.status != 200 || obj(r.body["agreement"])["status"] != "completed" {
		t.Fatalf("GET after update: %d %s", r.status, r.raw)
	}

	bad := map[string]string{
		"no externalId":   `{"status":"sent"}`,
		"bad status":      `{"externalId":"e","status":"superseded"}`,
		"status type":     `{"externalId":"e","status":3}`,
		"duplicate role":  `{"externalId":"e","status":"sent","signers":[{"role":"lessee"},{"role":"lessee"}]}`,
		"signers type":    `{"externalId":"e","status":"sent","signers":{"role":"lessee"}}`,
		"signer role":     `{"externalId":"e","status":"sent","signers":[{"name":"x"}]}`,
		"not JSON":        `{"externalId":`,
		"externalId type": `{"externalId":7,"status":"sent"}`,
	}
	for name, body := range bad {
		if r := h.put(auth, "res_1", body); r.status != 400 || r.body["error"] != "invalid_request" {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		}
	}
	if r := h.put(auth, "res_1", `{"externalId":"e","status":"nope"}`); !strings.Contains(fmt.Sprint(r.body["message"]), "status") {
		t.Errorf("bad status message does not name status: %s", r.raw)
	}
	if r := h.put(auth, "res_1", `{"status":"failed"}`); r.status != 409 || r.body["error"] != "conflict" {
		t.Errorf("failed without externalId over completed: %d %s", r.status, r.raw)
	}
	if r := h.put(auth, "res_unknown", `{"externalId":"e","status":"sent"}`); r.status != 404 || r.body["error"] != "not_found" {
		t.Errorf("unknown reservation: %d %s", r.status, r.raw)
	}
	if r := h.put("", "res_1", `{"externalId":"e","status":"sent"}`); r.status != 401 || r.header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("no credentials: %d %s", r.status, r.raw)
	}
	for _, p := range []struct{ method, path string }{
		{"GET", "/api/v1/reservations/res_1/agreement/nope"},
		{"DELETE", "/api/v1/reservations/res_1/agreement"},
		{"POST", "/api/v1/reservations/res_1/agreement/document"},
		{"GET", "/admin/v1/orgs/org_ext/reservations/res_1/agreements"},
	} {
		if r := h.do(p.method, p.path, auth, "", nil); r.status != 404 || r.body["error"] != "not_found" {
			t.Errorf("%s %s: %d %s", p.method, p.path, r.status, r.raw)
		}
	}

	// Another org's credentials see the reservation as unknown.
	other := h.ready("org_other", "res_2", eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL)
	if r := h.do("GET", "/api/v1/reservations/res_1/agreement", other, "", nil); r.status != 404 {
		t.Errorf("foreign reservation: %d %s", r.status, r.raw)
	}
	// A deleted reservation is gone, and an older event cannot bring it back.
	h.reservation("res_2", "org_other", "reservation.deleted", 3)
	h.waitFor(other, "res_2", 404)
	h.reservation("res_2", "org_other", "reservation.updated", 2)
	h.reservation("res_2b", "org_other", "reservation.created", 1)
	h.waitFor(other, "res_2b", 200)
	if r := h.do("GET", "/api/v1/reservations/res_2/agreement", other, "", nil); r.status != 404 {
		t.Errorf("deleted reservation came back: %d %s", r.status, r.raw)
	}
}

// TestReservationFactsUnchanged checks that a reservation event changing
// none of the facts the projection keeps writes nothing: the stored version
// stays, so a state that does change them is still taken as newer, even
// one (made up for the test) at the version of the event that changed
// nothing.
func TestReservationFactsUnchanged(t *testing.T) {
	t.Parallel()
	h := start(t)
	h.ready("org_same", "res_same", eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL)
	h.reservation("res_same", "org_same", "reservation.updated", 2) // same org and property
	h.publish(h.cfg.Kafka.Topic("reservations"), "res_same", &eventsv1.ReservationEvent{
		Envelope:    &eventsv1.Envelope{EventId: "res_same2b", Type: "reservation.updated", OrgId: "org_same", AggregateId: "res_same", AggregateVersion: 2, OccurredAt: timestamppb.Now()},
		Reservation: &eventsv1.Reservation{Id: "res_same", OrgId: "org_same", PropertyId: "prop_moved", Status: eventsv1.ReservationStatus_RESERVATION_STATUS_RESERVED},
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		var d struct {
			Version    int64  `bson:"version"`
			PropertyID string `bson:"propertyId"`
		}
		if err := h.db.Collection("reservations").FindOne(context.Background(), bson.D{{Key: "_id", Value: "res_same"}}).Decode(&d); err != nil {
			t.Fatal(err)
		}
		if d.PropertyID == "prop_moved" && d.Version == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored version %d, property %s: the event without a change of facts was written", d.Version, d.PropertyID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEvents checks the agreement events: every change of a version is one
// event with that version's state and whether it is current, revisions grow
// by one, and an identical repeat emits nothing.
func TestEvents(t *testing.T) {
	t.Parallel()
	h := start(t)
	auth := h.ready("org_ev", "res_ev", eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL)
	steps := []struct {
		body   string
		status int
	}{
		{`{"externalId":"a","status":"sent"}`, 201},
		{`{"externalId":"a","status":"sent"}`, 200}, // identical: no event
		{`{"externalId":"b","status":"sent"}`, 201}, // a superseded, b current
		{`{"externalId":"a","status":"voided"}`, 200},
		{`{"externalId":"b","status":"completed"}`, 200},
	}
	for i, s := range steps {
		if r := h.put(auth, "res_ev", s.body); r.status != s.status {
			t.Fatalf("step %d: %d %s", i, r.status, r.raw)
		}
	}
	if r := h.admin("POST", "/orgs/org_ev/reservations/res_ev/request-contract", ""); r.status != 202 ||
		obj(r.body["contractRequest"])["propertyId"] != "prop_res_ev" {
		t.Fatalf("request contract: %d %s", r.status, r.raw)
	}
	want := []string{
		"1 agreement.updated v1 sent current=true",
		"2 agreement.updated v1 superseded current=false",
		"3 agreement.updated v2 sent current=true",
		"4 agreement.updated v1 voided current=false",
		"5 agreement.updated v2 completed current=true",
		"6 agreement.requested v2 completed current=true prop_res_ev",
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: h.cfg.Kafka.Brokers, GroupID: "events-test", Topic: h.cfg.Kafka.Topic("agreements"), StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []string
	for len(got) < len(want) {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read events: %v (got %v)", err, got)
		}
		var ev eventsv1.AgreementEvent
		if err := proto.Unmarshal(m.Value, &ev); err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != "res_ev" || ev.GetEnvelope().GetAggregateId() != "res_ev" || ev.GetEnvelope().GetOrgId() != "org_ev" {
			t.Fatalf("event keys: %s %v", m.Key, ev.GetEnvelope())
		}
		a := ev.GetAgreement()
		line := fmt.Sprintf("%d %s v%d %s current=%v", ev.GetEnvelope().GetAggregateVersion(), ev.GetEnvelope().GetType(),
			a.GetVersion(), strings.ToLower(strings.TrimPrefix(a.GetStatus().String(), "AGREEMENT_STATUS_")), ev.GetCurrent())
		if cr := ev.GetContractRequest(); cr != nil {
			line += " " + cr.GetPropertyId()
		}
		got = append(got, line)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
}

// TestConcurrentReports sends two reports with different new externalIds at
// once, many times: each time exactly one is current, the versions are
// consecutive and both are in the history.
func TestConcurrentReports(t *testing.T) {
	t.Parallel()
	h := start(t)
	auth := h.org("org_cc", eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL, 1)
	const rounds = 8
	for i := range rounds {
		h.reservation(fmt.Sprintf("res_cc%d", i), "org_cc", "reservation.created", 1)
	}
	for i := range rounds {
		h.waitFor(auth, fmt.Sprintf("res_cc%d", i), 200)
	}
	for i := range rounds {
		res := fmt.Sprintf("res_cc%d", i)
		var wg sync.WaitGroup
		codes := make([]int, 2)
		for j := range 2 {
			wg.Go(func() {
				codes[j] = h.put(auth, res, fmt.Sprintf(`{"externalId":"env-%d-%d","status":"sent"}`, i, j)).status
			})
		}
		wg.Wait()
		if codes[0] != 201 || codes[1] != 201 {
			t.Fatalf("round %d: %v", i, codes)
		}
		var doc struct {
			Versions []struct {
				Version    int    `bson:"version"`
				Status     string `bson:"status"`
				ExternalID string `bson:"externalId"`
			} `bson:"versions"`
		}
		if err := h.db.Collection("agreements").FindOne(context.Background(), bson.D{{Key: "_id", Value: res}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		v := doc.Versions
		if len(v) != 2 || v[0].Version != 1 || v[1].Version != 2 || v[0].Status != "superseded" || v[1].Status != "sent" || v[0].ExternalID == v[1].ExternalID {
			t.Fatalf("round %d history: %+v", i, v)
		}
		cur := obj(h.do("GET", "/api/v1/reservations/"+res+"/agreement", auth, "", nil).body["agreement"])
		if cur["externalId"] != v[1].ExternalID || cur["version"] != 2.0 {
			t.Fatalf("round %d current: %v", i, cur)
		}
	}
}

// pdf returns a PDF-shaped body of exactly n bytes.
func pdf(n int) []byte {
	b := bytes.Repeat([]byte("0123456789abcdef\n"), n/17+1)[:n]
	copy(b, "%PDF-1.7\n")
	copy(b[n-7:], "%%EOF\n\n")
	return b
}

func (h *harness) counts() (files, chunks int64) {
	h.t.Helper()
	ctx := context.Background()
	f, err := h.db.Collection("documents.files").CountDocuments(ctx, bson.D{})
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := h.db.Collection("documents.chunks").CountDocuments(ctx, bson.D{})
	if err != nil {
		h.t.Fatal(err)
	}
	return f, c
}

func TestDocuments(t *testing.T) {
	t.Parallel()
	h := start(t)
	auth := h.ready("org_doc", "res_doc", eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL)
	docPath := "/api/v1/reservations/res_doc/agreement/document"
	upload := func(ct string, body io.Reader) resp {
		return h.do("PUT", docPath, auth, ct, body)
	}
	small := pdf(1000)
	if r := upload("application/pdf", bytes.NewReader(small)); r.status != 404 {
		t.Fatalf("no agreement: %d %s", r.status, r.raw)
	}
	if r := h.do("GET", docPath, auth, "", nil); r.status != 404 || r.body["error"] != "not_found" {
		t.Fatalf("GET with no agreement: %d %s", r.status, r.raw)
	}
	h.put(auth, "res_doc", `{"externalId":"env-1","status":"sent"}`)
	if r := upload("application/pdf", bytes.NewReader(small)); r.status != 409 || r.body["error"] != "conflict" {
		t.Fatalf("not completed: %d %s", r.status, r.raw)
	}
	h.put(auth, "res_doc", `{"externalId":"env-1","status":"completed"}`)

	for name, tc := range map[string]struct {
		ct   string
		body []byte
	}{
		"wrong content type": {"application/octet-stream", small},
		"empty":              {"application/pdf", nil},
		"fake PDF":           {"application/pdf", []byte("this is not a PDF at all, %%EOF")},
		"no trailer":         {"application/pdf", append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 5000)...)},
	} {
		if r := upload(tc.ct, bytes.NewReader(tc.body)); r.status != 415 || r.body["error"] != "unsupported_media_type" {
			t.Errorf("%s: %d %s", name, r.status, r.raw)
		}
	}
	if f, c := h.counts(); f != 0 || c != 0 {
		t.Fatalf("refused uploads left %d files and %d chunks", f, c)
	}

	max := pdf(app.MaxDocumentBytes)
	r := upload("application/pdf", bytes.NewReader(max))
	if r.status != 200 {
		t.Fatalf("25 MB exactly: %d %s", r.status, r.raw)
	}
	sum := sha256.Sum256(max)
	doc := obj(obj(r.body["agreement"])["document"])
	if doc["checksum"] != "sha256:"+hex.EncodeToString(sum[:]) || doc["bytes"] != float64(app.MaxDocumentBytes) || doc["contentType"] != "application/pdf" || doc["archivedAt"] == nil {
		t.Fatalf("document: %v", doc)
	}
	res, err := http.Get(h.srv.URL + docPath)
	if err != nil || res.StatusCode != 401 {
		t.Fatalf("GET document without credentials: %v %v", res, err)
	}
	res.Body.Close()
	g := h.do("GET", docPath, auth, "", nil)
	if g.status != 200 || g.header.Get("Content-Type") != "application/pdf" || g.header.Get("Content-Length") != fmt.Sprint(app.MaxDocumentBytes) || !bytes.Equal(g.raw, max) {
		t.Fatalf("download: %d %v (%d bytes)", g.status, g.header, len(g.raw))
	}
	perFile := int64((app.MaxDocumentBytes + 255<<10 - 1) / (255 << 10))
	if f, c := h.counts(); f != 1 || c != perFile {
		t.Fatalf("after one upload: %d files, %d chunks", f, c)
	}

	over := pdf(app.MaxDocumentBytes + 1)
	if r := upload("application/pdf", bytes.NewReader(over)); r.status != 413 || r.body["error"] != "payload_too_large" {
		t.Fatalf("25 MB + 1: %d %s", r.status, r.raw)
	}
	// Without a length the body is counted while it streams.
	if r := upload("application/pdf", io.MultiReader(bytes.NewReader(over))); r.status != 413 || r.body["error"] != "payload_too_large" {
		t.Fatalf("25 MB + 1 without Content-Length: %d %s", r.status, r.raw)
	}

	// A second upload replaces the copy and its checksum and leaves no
	// orphaned chunks.
	r = upload("application/pdf", bytes.NewReader(small))
	sum = sha256.Sum256(small)
	if r.status != 200 || obj(obj(r.body["agreement"])["document"])["checksum"] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("second upload: %d %s", r.status, r.raw)
	}
	if f, c := h.counts(); f != 1 || c != 1 {
		t.Fatalf("after replacing: %d files, %d chunks", f, c)
	}
	if g := h.do("GET", docPath, auth, "", nil); !bytes.Equal(g.raw, small) || g.header.Get("Content-Length") != "1000" {
		t.Fatalf("download after replacing: %d bytes", len(g.raw))
	}

	// A new version has no document yet: GET answers 404 again.
	h.put(auth, "res_doc", `{"externalId":"env-2","status":"sent"}`)
	if g := h.do("GET", docPath, auth, "", nil); g.status != 404 {
		t.Fatalf("document of a new version: %d %s", g.status, g.raw)
	}
}

func TestQuartersAgreements(t *testing.T) {
	t.Parallel()
	h := start(t)
	auth := h.ready("org_q", "res_q", eventsv1.ContractProvider_CONTRACT_PROVIDER_QUARTERS)
	if r := h.put(auth, "res_q", `{"externalId":"e","status":"sent"}`); r.status != 409 || r.body["error"] != "conflict" {
		t.Fatalf("report by a quarters org: %d %s", r.status, r.raw)
	}
	if r := h.admin("POST", "/orgs/org_q/reservations/res_q/request-contract", ""); r.status != 409 {
		t.Fatalf("request contract for a quarters org: %d %s", r.status, r.raw)
	}
	if r := h.admin("POST", "/orgs/org_q/reservations/res_q/agreements", `{"signers":[]}`); r.status != 400 || !strings.Contains(r.raw2(), "templateName") {
		t.Fatalf("no template: %d %s", r.status, r.raw)
	}
	if r := h.admin("POST", "/orgs/org_nope/reservations/res_q/agreements", `{"templateName":"t"}`); r.status != 404 {
		t.Fatalf("unknown org: %d %s", r.status, r.raw)
	}
	if r := h.admin("POST", "/orgs/org_q/reservations/res_nope/agreements", `{"templateName":"t"}`); r.status != 404 {
		t.Fatalf("unknown reservation: %d %s", r.status, r.raw)
	}
	r := h.admin("POST", "/orgs/org_q/reservations/res_q/agreements",
		`{"templateName":"standard-lease","signers":[{"role":"lessor","name":"Owner","email":"o@example.com"},{"role":"lessee","name":"Guest","email":"g@example.com"}]}`)
	if r.status != 201 {
		t.Fatalf("issue: %d %s", r.status, r.raw)
	}
	g := h.do("GET", "/api/v1/reservations/res_q/agreement", auth, "", nil)
	a := obj(g.body["agreement"])
	if a["provider"] != "quarters" || a["templateName"] != "standard-lease" || a["status"] != "sent" || a["externalId"] != nil {
		t.Fatalf("public view: %s", g.raw)
	}
	for _, s := range a["signers"].([]any) {
		if v, ok := obj(s)["signingUrl"]; !ok || v != nil {
			t.Fatalf("signer exposes a signing link: %s", g.raw)
		}
	}
	if strings.Contains(string(g.raw), "oken") {
		t.Fatalf("signing token leaked: %s", g.raw)
	}
	h.admin("POST", "/orgs/org_q/reservations/res_q/agreements", `{"templateName":"standard-lease-2"}`)
	if g := h.do("GET", "/api/v1/reservations/res_q/agreement", auth, "", nil); obj(g.body["agreement"])["version"] != 2.0 {
		t.Fatalf("re-issue: %s", g.raw)
	}
	// Refused for a quarters agreement even when the org is external.
	h.org("org_q", eventsv1.ContractProvider_CONTRACT_PROVIDER_EXTERNAL, 2)
	deadline := time.Now().Add(time.Minute)
	for {
		r := h.do("PUT", "/api/v1/reservations/res_q/agreement/document", auth, "application/pdf", bytes.NewReader(pdf(100)))
		if r.status == 409 && strings.Contains(fmt.Sprint(r.body["message"]), "quarters") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("document for a quarters agreement: %d %s", r.status, r.raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := h.admin("POST", "/orgs/org_q/reservations/res_q/agreements", `{"templateName":"t"}`); r.status != 409 {
		t.Fatalf("issue for an external org: %d %s", r.status, r.raw)
	}
}

func (r resp) raw2() string { return string(r.raw) }
