package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

	"quarters.dev/tools/devstack/config"
	"quarters.dev/tools/devstack/stack"
)

// hookReceiver is an integrator's webhook receiver: it verifies the
// signature over the raw body with the secret it was given, and records
// what it got. The dev stack allows http and loopback receivers.
type hookReceiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	got    []hook
	signal chan struct{}
}

type hook struct {
	ID, Event string
	Data      map[string]any
	Body      []byte
	Signature string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{t: t, signal: make(chan struct{}, 1<<14)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		secret := r.secret
		r.mu.Unlock()
		sig := req.Header.Get("x-legacy-signature")
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(raw)
		if !hmac.Equal([]byte(sig), []byte("sha256="+hex.EncodeToString(m.Sum(nil)))) {
			t.Errorf("webhook signature %q does not verify over %s", sig, raw)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var env struct {
			ID        string         `json:"id"`
			Event     string         `json:"event"`
			CreatedAt string         `json:"createdAt"`
			Data      map[string]any `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil || env.ID == "" || !strings.HasSuffix(env.CreatedAt, "Z") {
			t.Errorf("webhook body %s: %v", raw, err)
		}
		if env.ID != req.Header.Get("x-legacy-delivery") || env.Event != req.Header.Get("x-legacy-event") || req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook headers %v do not match %s", req.Header, raw)
		}
		r.mu.Lock()
		r.got = append(r.got, hook{ID: env.ID, Event: env.Event, Data: env.Data, Body: raw, Signature: sig})
		r.mu.Unlock()
		r.signal <- struct{}{}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) received() []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hook(nil), r.got...)
}

// waitFor waits until cond holds for what was received.
func (r *hookReceiver) waitFor(within time.Duration, what string, cond func([]hook) bool) []hook {
	r.t.Helper()
	deadline := time.After(within)
	for {
		got := r.received()
		if cond(got) {
			return got
		}
		select {
		case <-r.signal:
		case <-deadline:
			r.t.Fatalf("webhooks: not within %s: %s; received %d: %v", within, what, len(got), events(got))
		}
	}
}

func events(hs []hook) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Event+" "+fmt.Sprint(h.Data))
	}
	return out
}

// adminAt calls the admin API of a given stack.
func adminAt(t *testing.T, s *stack.Stack, method, path, body string) answer {
	t.Helper()
	return call(t, method, s.AdminURL+path, "application/json", body, "Authorization", "Bearer "+s.AdminToken)
}

// requireService skips the test when the route's service is not part of
// this build yet (the ingress answers 503 service_unavailable).
func requireService(t *testing.T, a answer, what string) {
	t.Helper()
	if a.status == 503 && a.body["error"] == "service_unavailable" {
		t.Skipf("%s: %s", what, a.body["message"])
	}
	// The service runs but does not serve this route yet.
	if a.status == 404 && strings.HasPrefix(fmt.Sprint(a.body["message"]), "No resource at ") {
		t.Skipf("%s: the route is not served yet (%s)", what, a.body["message"])
	}
}

// registerWebhook registers url for org, waiting until the dispatcher has
// read the org's creation event.
func registerWebhook(t *testing.T, s *stack.Stack, org, url string) (string, string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		a := adminAt(t, s, "POST", "/orgs/"+org+"/webhooks", `{"url":"`+url+`"}`)
		requireService(t, a, "webhooks")
		if a.status == 201 {
			w := obj(a.body["webhook"])
			if w["url"] != url || w["secret"] == "" || !strings.HasSuffix(fmt.Sprint(w["createdAt"]), "Z") {
				t.Fatalf("register webhook: %s", a.raw)
			}
			return w["id"].(string), w["secret"].(string)
		}
		if a.status != 404 || time.Now().After(deadline) {
			t.Fatalf("register webhook: %d %s", a.status, a.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func newOrgAt(t *testing.T, s *stack.Stack, name string) string {
	t.Helper()
	a := adminAt(t, s, "POST", "/orgs", `{"name":"`+name+`"}`)
	if a.status != 201 {
		t.Fatalf("create org: %d %s", a.status, a.raw)
	}
	return obj(a.body["org"])["id"].(string)
}

func TestWebhookRegistrationPingAndRedelivery(t *testing.T) {
	org := newOrgAt(t, st, "Webhooks")
	r := newHookReceiver(t)
	id, secret := registerWebhook(t, st, org, r.srv.URL+"/hooks")
	r.mu.Lock()
	r.secret = secret
	r.mu.Unlock()

	a := admin(t, "GET", "/orgs/"+org+"/webhooks", "")
	if a.status != 200 || len(list(a.body["webhooks"])) != 1 || obj(list(a.body["webhooks"])[0])["secret"] != secret {
		t.Fatalf("list webhooks: %d %s", a.status, a.raw)
	}
	if a := admin(t, "GET", "/orgs/org_unknown/webhooks", ""); a.status != 404 || a.body["error"] != "not_found" {
		t.Fatalf("unknown org: %d %s", a.status, a.raw)
	}
	if a := admin(t, "POST", "/orgs/"+org+"/webhooks", `{"url":"nope"}`); a.status != 400 || a.body["error"] != "invalid_request" {
		t.Fatalf("bad url: %d %s", a.status, a.raw)
	}

	if a := admin(t, "POST", "/orgs/"+org+"/webhooks/"+id+"/ping", ""); a.status != 202 {
		t.Fatalf("ping: %d %s", a.status, a.raw)
	}
	got := r.waitFor(30*time.Second, "a ping", func(hs []hook) bool { return len(hs) >= 1 })
	if got[0].Event != "ping" || got[0].Data["webhookId"] != id {
		t.Fatalf("ping delivery %s", got[0].Body)
	}
	var rows []any
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := admin(t, "GET", "/orgs/"+org+"/webhooks/"+id+"/deliveries", "")
		rows = list(a.body["deliveries"])
		if len(rows) == 1 && obj(rows[0])["outcome"] == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries: %s", a.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	row := obj(rows[0])
	if row["id"] != got[0].ID || row["event"] != "ping" || row["statusCode"] != 200.0 || row["error"] != nil {
		t.Fatalf("delivery row %v", row)
	}
	if a := admin(t, "POST", "/orgs/"+org+"/webhooks/"+id+"/deliveries/"+got[0].ID+"/redeliver", ""); a.status != 202 {
		t.Fatalf("redeliver: %d %s", a.status, a.raw)
	}
	got = r.waitFor(30*time.Second, "the redelivery", func(hs []hook) bool { return len(hs) >= 2 })
	if got[1].ID != got[0].ID || !bytes.Equal(got[1].Body, got[0].Body) {
		t.Fatalf("redelivery differs: %s / %s", got[0].Body, got[1].Body)
	}
	if a := admin(t, "DELETE", "/orgs/"+org+"/webhooks/"+id, ""); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	if a := admin(t, "POST", "/orgs/"+org+"/webhooks/"+id+"/ping", ""); a.status != 404 {
		t.Fatalf("ping a deleted webhook: %d %s", a.status, a.raw)
	}
}

func list(v any) []any { l, _ := v.([]any); return l }

// TestWebhooksFollowTheProduct drives the product as an operator and checks
// what an integrator's receiver gets. It needs the catalog's admin routes,
// bookings and availability.
func TestWebhooksFollowTheProduct(t *testing.T) {
	org := newOrgAt(t, st, "Webhook Flow")
	r := newHookReceiver(t)
	_, secret := registerWebhook(t, st, org, r.srv.URL)
	r.mu.Lock()
	r.secret = secret
	r.mu.Unlock()

	a := admin(t, "POST", "/orgs/"+org+"/properties", `{"nickname":"Canal Loft","address":{"city":"Amsterdam","country":"NL"},"timezone":"Europe/Amsterdam",`+
		`"images":[{"isPrimary":true,"caption":null,"sortOrder":1,"width":800,"height":600,"bytes":1000,"url":"https://uploads.quarters.dev/e2e/loft.jpg"}]}`)
	requireService(t, a, "catalog admin")
	if a.status != 201 {
		t.Fatalf("create property: %d %s", a.status, a.raw)
	}
	prop := obj(a.body["property"])["id"].(string)
	if a := admin(t, "POST", "/orgs/"+org+"/properties/"+prop+"/publish", ""); a.status != 200 {
		t.Fatalf("publish: %d %s", a.status, a.raw)
	}
	a = admin(t, "POST", "/orgs/"+org+"/reservations", `{"propertyId":"`+prop+`","status":"reserved","guest":{"firstName":"Ada","lastName":"Lovelace","email":"ada@example.com"},"checkIn":"2027-03-01","checkOut":"2027-04-01"}`)
	requireService(t, a, "bookings")
	if a.status != 201 {
		t.Fatalf("create reservation: %d %s", a.status, a.raw)
	}
	res := obj(a.body["reservation"])["id"].(string)
	for _, st := range []string{"confirmed", "cancelled"} {
		if a := admin(t, "PATCH", "/orgs/"+org+"/reservations/"+res, `{"status":"`+st+`"}`); a.status != 200 {
			t.Fatalf("%s: %d %s", st, a.status, a.raw)
		}
	}
	if a := admin(t, "DELETE", "/orgs/"+org+"/reservations/"+res, ""); a.status != 204 {
		t.Fatalf("delete reservation: %d %s", a.status, a.raw)
	}
	a = admin(t, "POST", "/orgs/"+org+"/properties/"+prop+"/blocks", `{"start":"2027-06-01","end":"2027-06-15","reason":"renovation"}`)
	requireService(t, a, "availability")
	if a.status != 201 {
		t.Fatalf("add block: %d %s", a.status, a.raw)
	}
	if a := admin(t, "POST", "/orgs/"+org+"/properties/"+prop+"/unpublish", ""); a.status != 204 {
		t.Fatalf("unpublish: %d %s", a.status, a.raw)
	}

	resData := func(status, prev string) string {
		s := fmt.Sprintf("reservationId:%s propertyId:%s status:%s", res, prop, status)
		if prev != "" {
			s += " previousStatus:" + prev
		}
		return s
	}
	wants := map[string]string{
		"listing.updated " + "listingId:" + prop:                                      "publish",
		"reservation.created " + resData("reserved", ""):                              "create",
		"reservation.updated " + resData("confirmed", "reserved"):                     "confirm",
		"reservation.updated " + resData("cancelled", "confirmed"):                    "cancel",
		"reservation.deleted " + resData("cancelled", ""):                             "delete",
		"calendar.updated " + "propertyId:" + prop + " from:2027-06-01 to:2027-06-14": "block",
		"listing.deleted " + "listingId:" + prop:                                      "unpublish",
	}
	key := func(h hook) string {
		var parts []string
		for _, k := range []string{"listingId", "reservationId", "propertyId", "status", "previousStatus", "from", "to"} {
			if v, ok := h.Data[k]; ok {
				parts = append(parts, k+":"+fmt.Sprint(v))
			}
		}
		return h.Event + " " + strings.Join(parts, " ")
	}
	got := r.waitFor(60*time.Second, "every event", func(hs []hook) bool {
		seen := map[string]bool{}
		for _, h := range hs {
			seen[key(h)] = true
		}
		for w := range wants {
			if !seen[w] {
				return false
			}
		}
		return true
	})
	// Give a duplicate the time to show up, then count.
	time.Sleep(3 * time.Second)
	got = r.received()
	ids := map[string]int{}
	count := map[string]int{}
	for _, h := range got {
		ids[h.ID]++
		count[key(h)]++
		if h.Event == "calendar.updated" && (h.Data["propertyId"] != prop || h.Data["from"] == nil || h.Data["to"] == nil) {
			t.Errorf("calendar.updated data %v", h.Data)
		}
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("delivery %s received %d times", id, n)
		}
	}
	for w, what := range wants {
		if count[w] != 1 {
			t.Errorf("%s (%s) received %d times", w, what, count[w])
		}
	}
	for _, h := range got {
		if h.Event != "calendar.updated" && wants[key(h)] == "" {
			t.Errorf("unexpected webhook %s", key(h))
		}
	}
}

// TestWebhookDispatcherKilledMidStream kills the dispatcher (SIGKILL) while
// reservations are being created, starts it again, and checks that every
// event reached the receiver exactly once. It runs on a stack of its own so
// that the shared one keeps its dispatcher. It needs bookings.
func TestWebhookDispatcherKilledMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second dev stack")
	}
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		t.Skip("finding the dispatcher's process needs /proc")
	}
	dir := t.TempDir()
	var out bytes.Buffer
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.Demo = false
	cfg.RedisURL = os.Getenv("QUARTERS_TEST_REDIS_URL")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, stack.Config{Config: cfg, Output: &out, StopGrace: 10 * time.Second})
	if err != nil {
		t.Fatalf("start a second stack: %v\n%s", err, out.String())
	}
	defer s.Stop()

	org := newOrgAt(t, s, "Webhook Restart")
	r := newHookReceiver(t)
	hookID, secret := registerWebhook(t, s, org, r.srv.URL)
	r.mu.Lock()
	r.secret = secret
	r.mu.Unlock()
	a := adminAt(t, s, "POST", "/orgs/"+org+"/reservations", `{"propertyId":"prop_restart","status":"inquiry","guest":{"firstName":"A","lastName":"B","email":"a@example.com"},"checkIn":"2027-01-01","checkOut":"2027-01-05"}`)
	requireService(t, a, "bookings")
	if a.status != 201 {
		t.Fatalf("create reservation: %d %s", a.status, a.raw)
	}
	first := obj(a.body["reservation"])["id"].(string)

	binary := filepath.Join(dir, "bin", "webhook-dispatcher")
	pid := processOf(t, binary)

	// A stream of bookings; the dispatcher dies a few events in.
	const n = 60
	created := []string{first}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i < n; i++ {
			a := adminAt(t, s, "POST", "/orgs/"+org+"/reservations", fmt.Sprintf(`{"propertyId":"prop_restart_%d","status":"inquiry","guest":{"firstName":"A","lastName":"B","email":"a@example.com"},"checkIn":"2027-01-01","checkOut":"2027-01-05"}`, i))
			if a.status != 201 {
				t.Errorf("create reservation %d: %d %s", i, a.status, a.raw)
				return
			}
			mu.Lock()
			created = append(created, obj(a.body["reservation"])["id"].(string))
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	r.waitFor(60*time.Second, "the first deliveries", func(hs []hook) bool { return len(hs) >= 10 })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the dispatcher: %v", err)
	}
	// Start it again as its replacement would be: the same binary and
	// settings, new ports (the dead process's routes stay off the ingress, so
	// the test talks to the replacement directly).
	apiAddr := freeAddr(t)
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(),
		"QUARTERS_MONGO_URI="+s.MongoURI, "QUARTERS_KAFKA_BROKERS="+strings.Join(s.KafkaBrokers, ","),
		"QUARTERS_ADMIN_TOKEN="+s.AdminToken, "QUARTERS_WEBHOOK_ALLOW_HTTP=true", "QUARTERS_WEBHOOK_ALLOW_PRIVATE=true",
		"QUARTERS_WEBHOOK_INTERRUPTED_AFTER=15s", "QUARTERS_WEBHOOK_SCAN_INTERVAL=1s",
		"QUARTERS_HTTP_ADDR="+apiAddr, "QUARTERS_OPS_ADDR="+freeAddr(t))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("replacement dispatcher log:\n%s", logs.String())
		}
	}()
	<-done
	mu.Lock()
	ids := append([]string(nil), created...)
	mu.Unlock()
	if len(ids) != n {
		t.Fatalf("created %d reservations, want %d", len(ids), n)
	}

	// Rows of the delivery list, read from the replacement.
	rows := func() map[string]map[string]any {
		a := call(t, "GET", "http://"+apiAddr+"/admin/v1/orgs/"+org+"/webhooks/"+hookID+"/deliveries?limit=100", "", "", "Authorization", "Bearer "+s.AdminToken)
		out := map[string]map[string]any{}
		for _, d := range list(a.body["deliveries"]) {
			out[obj(d)["id"].(string)] = obj(d)
		}
		return out
	}
	// Every reservation is delivered, or its attempt was cut by the kill and
	// is recorded as interrupted (then it may have arrived once, or not).
	createdOf := func(hs []hook) map[string]int {
		m := map[string]int{}
		for _, h := range hs {
			if h.Event == "reservation.created" {
				m[fmt.Sprint(h.Data["reservationId"])]++
			}
		}
		return m
	}
	var interrupted map[string]bool
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := createdOf(r.received())
		interrupted = map[string]bool{}
		for _, row := range rows() {
			if row["reason"] == "interrupted" {
				interrupted[row["id"].(string)] = true
			}
		}
		missing := 0
		for _, id := range ids {
			if got[id] == 0 {
				missing++
			}
		}
		if missing <= len(interrupted) && (missing == 0 || len(interrupted) > 0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d reservations not delivered (%d interrupted); dispatcher log:\n%s", missing, n, len(interrupted), logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // room for a duplicate to show up
	seen := map[string]int{}
	for _, h := range r.received() {
		seen[h.ID]++
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("delivery %s received %d times", id, c)
		}
	}
	got := createdOf(r.received())
	for _, id := range ids {
		if got[id] > 1 {
			t.Errorf("reservation %s delivered %d times", id, got[id])
		}
	}
	if len(interrupted) > 0 {
		t.Logf("%d attempt(s) were under way at the kill and are recorded as interrupted", len(interrupted))
	}
}

// processOf finds the pid of the process running binary.
func processOf(t *testing.T, binary string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == binary {
			return pid
		}
	}
	t.Fatalf("no process runs %s", binary)
	return 0
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
