package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// documentLimit is the spec's 25 MB bound on an archived PDF.
const documentLimit = 25 << 20

// integrator is an org's credential set with a minted bearer token.
type integrator struct {
	orgID string
	auth  string
}

// agreementOrg creates an org with the given contract provider and a
// credential set, and mints a token as an integrator does.
func agreementOrg(t *testing.T, name, provider string) integrator {
	t.Helper()
	orgID, creds := newOrg(t, name, 1)
	if a := admin(t, "PATCH", "/orgs/"+orgID, `{"contractProvider":"`+provider+`"}`); a.status != 200 {
		t.Fatalf("set provider: %d %s", a.status, a.raw)
	}
	a := call(t, "POST", st.BaseURL+"/oauth2/token", form, "grant_type=client_credentials&client_id="+creds[0].id+"&client_secret="+creds[0].secret)
	if a.status != 200 {
		t.Fatalf("mint: %d %s", a.status, a.raw)
	}
	return integrator{orgID: orgID, auth: "Bearer " + a.body["access_token"].(string)}
}

// newReservation books through the operator API (the bookings service) and
// waits until the agreements service knows the booking.
func newReservation(t *testing.T, in integrator, status string) string {
	t.Helper()
	a := admin(t, "POST", "/orgs/"+in.orgID+"/reservations", `{"propertyId":"prop_`+strconv.FormatInt(time.Now().UnixNano(), 36)+`","status":"`+status+`",
		"guest":{"firstName":"Ann","lastName":"Tenant","email":"ann@example.com"},"checkIn":"2027-03-01","checkOut":"2027-06-01","requiresContract":true}`)
	if a.status == http.StatusServiceUnavailable {
		t.Skipf("the bookings service is not running, so no reservation can be made: %s", a.raw)
	}
	if a.status != 201 {
		t.Fatalf("create reservation: %d %s", a.status, a.raw)
	}
	id := obj(a.body["reservation"])["id"].(string)
	eventually(t, "the agreements service knows reservation "+id, func() (bool, string) {
		a := in.get(t, "/reservations/"+id+"/agreement")
		return a.status == 200, a.raw
	})
	return id
}

func eventually(t *testing.T, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		done, last := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not after 60s; last answer %s", what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (in integrator) get(t *testing.T, path string) answer {
	t.Helper()
	return call(t, "GET", st.BaseURL+path, "", "", "Authorization", in.auth)
}

func (in integrator) report(t *testing.T, resID, body string) answer {
	t.Helper()
	return call(t, "PUT", st.BaseURL+"/reservations/"+resID+"/agreement", "application/json", body, "Authorization", in.auth)
}

func (in integrator) upload(t *testing.T, resID, contentType, body string) answer {
	t.Helper()
	return call(t, "PUT", st.BaseURL+"/reservations/"+resID+"/agreement/document", contentType, body, "Authorization", in.auth)
}

func agreementOf(a answer) map[string]any { return obj(a.body["agreement"]) }

func TestAgreementReportsEndToEnd(t *testing.T) {
	in := agreementOrg(t, "External Signatures", "external")
	res := newReservation(t, in, "reserved")

	if a := in.get(t, "/reservations/"+res+"/agreement"); a.raw != `{"agreement":null}` {
		t.Fatalf("before any report: %s", a.raw)
	}
	first := in.report(t, res, `{"externalId":"env-1","status":"sent","documentUrl":"https://esign.example/d/env-1",
		"signers":[{"role":"lessor","name":"Owner"},{"role":"lessee","name":"Ann","signingUrl":"https://esign.example/s/ann"}]}`)
	if first.status != 201 || agreementOf(first)["version"] != 1.0 || agreementOf(first)["provider"] != "external" {
		t.Fatalf("first report: %d %s", first.status, first.raw)
	}
	if s := obj(agreementOf(first)["signers"].([]any)[1]); s["signingUrl"] != "https://esign.example/s/ann" {
		t.Fatalf("signing link not echoed: %s", first.raw)
	}
	inPlace := in.report(t, res, `{"externalId":"env-1","status":"sent","signers":[{"role":"lessee","status":"viewed"}]}`)
	if inPlace.status != 200 || agreementOf(inPlace)["id"] != agreementOf(first)["id"] || len(agreementOf(inPlace)["signers"].([]any)) != 2 {
		t.Fatalf("in-place update: %d %s", inPlace.status, inPlace.raw)
	}
	if again := in.report(t, res, `{"externalId":"env-1","status":"sent","signers":[{"role":"lessee","status":"viewed"}]}`); again.status != 200 ||
		agreementOf(again)["updatedAt"] != agreementOf(inPlace)["updatedAt"] {
		t.Fatalf("identical repeat changed the agreement: %s", again.raw)
	}

	reissue := in.report(t, res, `{"externalId":"env-2","status":"sent"}`)
	if reissue.status != 201 || agreementOf(reissue)["version"] != 2.0 || agreementOf(reissue)["externalId"] != "env-2" {
		t.Fatalf("re-issue: %d %s", reissue.status, reissue.raw)
	}
	current := in.get(t, "/reservations/"+res+"/agreement")
	if agreementOf(current)["id"] != agreementOf(reissue)["id"] {
		t.Fatalf("current after re-issue: %s", current.raw)
	}

	// The superseded envelope completes late: only its historical row
	// records it; the current agreement and the booking stay as they are.
	late := in.report(t, res, `{"externalId":"env-1","status":"completed"}`)
	if late.status != 200 || agreementOf(late)["version"] != 1.0 {
		t.Fatalf("late report: %d %s", late.status, late.raw)
	}
	if now := in.get(t, "/reservations/"+res+"/agreement"); now.raw != current.raw {
		t.Fatalf("late report changed the current agreement:\n%s\n%s", current.raw, now.raw)
	}
	// A later change of the current agreement shows when the booking has
	// seen everything up to it: by then it must still be reserved, showing
	// version 2.
	viewed := in.report(t, res, `{"externalId":"env-2","status":"sent","signers":[{"role":"lessee","status":"viewed"}]}`)
	if viewed.status != 200 {
		t.Fatalf("update of the current agreement: %d %s", viewed.status, viewed.raw)
	}
	eventually(t, "the booking shows the current agreement", func() (bool, string) {
		b := in.get(t, "/reservations/"+res)
		ag := obj(obj(b.body["reservation"])["agreement"])
		return ag["updatedAt"] == agreementOf(viewed)["updatedAt"], b.raw
	})
	if b := in.get(t, "/reservations/"+res); obj(b.body["reservation"])["status"] != "reserved" ||
		obj(obj(b.body["reservation"])["agreement"])["version"] != 2.0 {
		t.Fatalf("a late report on a superseded envelope reached the booking: %s", b.raw)
	}

	for name, body := range map[string]string{
		"missing externalId": `{"status":"sent"}`,
		"unreportable":       `{"externalId":"env-2","status":"superseded"}`,
		"duplicate role":     `{"externalId":"env-2","status":"sent","signers":[{"role":"lessee"},{"role":"lessee"}]}`,
	} {
		if a := in.report(t, res, body); a.status != 400 || a.body["error"] != "invalid_request" {
			t.Errorf("%s: %d %s", name, a.status, a.raw)
		}
	}
	if a := in.report(t, res, `{"status":"failed","error":"no envelope"}`); a.status != 409 || a.body["error"] != "conflict" {
		t.Errorf("failed without externalId over a sent envelope: %d %s", a.status, a.raw)
	}
	if a := in.report(t, "res_unknown", `{"externalId":"x","status":"sent"}`); a.status != 404 || a.body["error"] != "not_found" {
		t.Errorf("unknown reservation: %d %s", a.status, a.raw)
	}
	if a := in.get(t, "/reservations/"+res+"/agreement/history"); a.status != 404 || a.body["error"] != "not_found" {
		t.Errorf("unknown path under the agreement: %d %s", a.status, a.raw)
	}
	other := agreementOrg(t, "Someone Else", "external")
	if a := other.get(t, "/reservations/"+res+"/agreement"); a.status != 404 {
		t.Errorf("another org's reservation: %d %s", a.status, a.raw)
	}
	// No email for any report.
	if a := admin(t, "GET", "/orgs/"+in.orgID+"/emails", ""); a.status == 200 && len(a.body["emails"].([]any)) != 0 {
		t.Errorf("reports sent email: %s", a.raw)
	}
}

// TestCompletedAgreementConfirmsBooking needs the bookings service: the
// booking embeds the current agreement and is confirmed by its completion.
func TestCompletedAgreementConfirmsBooking(t *testing.T) {
	in := agreementOrg(t, "Confirming Org", "external")
	res := newReservation(t, in, "reserved")
	in.report(t, res, `{"externalId":"env-a","status":"sent"}`)
	done := in.report(t, res, `{"externalId":"env-a","status":"completed","signers":[{"role":"lessee","status":"completed"}]}`)
	if done.status != 200 {
		t.Fatalf("complete: %d %s", done.status, done.raw)
	}
	eventually(t, "the booking is confirmed", func() (bool, string) {
		b := in.get(t, "/reservations/"+res)
		r := obj(b.body["reservation"])
		ag := obj(r["agreement"])
		return r["status"] == "confirmed" && r["confirmedAt"] != nil && ag["id"] == agreementOf(done)["id"] && ag["status"] == "completed", b.raw
	})
}

// A completed report confirms a reserved booking also when the agreement
// was completed while the booking was still an inquiry: the report, not a
// change of the agreement, is what confirms.
func TestCompletedReportConfirmsBookingReservedLater(t *testing.T) {
	in := agreementOrg(t, "Confirming Later Org", "external")
	res := newReservation(t, in, "inquiry")
	completed := `{"externalId":"env-b","status":"completed"}`
	if a := in.report(t, res, completed); a.status != 201 {
		t.Fatalf("first report: %d %s", a.status, a.raw)
	}
	eventually(t, "bookings embeds the completed agreement", func() (bool, string) {
		b := in.get(t, "/reservations/"+res)
		return obj(obj(b.body["reservation"])["agreement"])["status"] == "completed", b.raw
	})
	if b := obj(in.get(t, "/reservations/"+res).body["reservation"]); b["status"] != "inquiry" {
		t.Fatalf("an inquiry stays an inquiry: %v", b["status"])
	}
	if a := admin(t, "PATCH", "/orgs/"+in.orgID+"/reservations/"+res, `{"status":"reserved"}`); a.status != 200 {
		t.Fatalf("reserve: %d %s", a.status, a.raw)
	}
	if a := in.report(t, res, completed); a.status != 200 {
		t.Fatalf("repeated report: %d %s", a.status, a.raw)
	}
	eventually(t, "the booking is confirmed", func() (bool, string) {
		b := in.get(t, "/reservations/"+res)
		r := obj(b.body["reservation"])
		return r["status"] == "confirmed" && r["confirmedAt"] != nil, b.raw
	})
}

func TestQuartersOrgAgreements(t *testing.T) {
	in := agreementOrg(t, "Quarters Signs", "quarters")
	res := newReservation(t, in, "reserved")
	if a := in.report(t, res, `{"externalId":"env-1","status":"sent"}`); a.status != 409 || a.body["error"] != "conflict" {
		t.Fatalf("report by a quarters org: %d %s", a.status, a.raw)
	}
	base := "/orgs/" + in.orgID + "/reservations/" + res
	if a := admin(t, "POST", base+"/request-contract", ""); a.status != 409 {
		t.Fatalf("request contract of a quarters org: %d %s", a.status, a.raw)
	}
	issued := admin(t, "POST", base+"/agreements", `{"templateName":"standard-lease","signers":[{"role":"lessor","name":"Owner","email":"owner@example.com"},{"role":"lessee","name":"Ann","email":"ann@example.com"}]}`)
	if issued.status != 201 || agreementOf(issued)["provider"] != "quarters" || agreementOf(issued)["status"] != "sent" {
		t.Fatalf("issue: %d %s", issued.status, issued.raw)
	}
	a := in.get(t, "/reservations/"+res+"/agreement")
	ag := agreementOf(a)
	if ag["provider"] != "quarters" || ag["templateName"] != "standard-lease" || ag["id"] != agreementOf(issued)["id"] {
		t.Fatalf("public view: %s", a.raw)
	}
	for _, s := range ag["signers"].([]any) {
		if v, ok := obj(s)["signingUrl"]; !ok || v != nil {
			t.Fatalf("a quarters signer shows a signing link: %s", a.raw)
		}
	}
	if a := in.upload(t, res, "application/pdf", fakePDF(1000)); a.status != 409 {
		t.Fatalf("document for a quarters agreement: %d %s", a.status, a.raw)
	}
	ext := agreementOrg(t, "Requests Contracts", "external")
	extRes := newReservation(t, ext, "reserved")
	if a := admin(t, "POST", "/orgs/"+ext.orgID+"/reservations/"+extRes+"/request-contract", ""); a.status != 202 {
		t.Fatalf("request contract: %d %s", a.status, a.raw)
	}
	if a := admin(t, "POST", "/orgs/"+ext.orgID+"/reservations/"+extRes+"/agreements", `{"templateName":"t"}`); a.status != 409 {
		t.Fatalf("issue for an external org: %d %s", a.status, a.raw)
	}
}

// fakePDF returns a PDF-shaped body of exactly n bytes.
func fakePDF(n int) string {
	var b strings.Builder
	b.Grow(n)
	b.WriteString("%PDF-1.7\n")
	for b.Len() < n-7 {
		b.WriteString(strings.Repeat("q", min(4096, n-7-b.Len())))
	}
	b.WriteString("%%EOF\n\n")
	return b.String()
}

func TestAgreementDocumentsEndToEnd(t *testing.T) {
	in := agreementOrg(t, "Archives PDFs", "external")
	res := newReservation(t, in, "reserved")
	docPath := "/reservations/" + res + "/agreement/document"
	if a := in.upload(t, res, "application/pdf", fakePDF(100)); a.status != 404 {
		t.Fatalf("no agreement: %d %s", a.status, a.raw)
	}
	in.report(t, res, `{"externalId":"env-1","status":"completed"}`)
	if a := in.get(t, docPath); a.status != 404 {
		t.Fatalf("nothing archived: %d %s", a.status, a.raw)
	}
	for name, body := range map[string]string{"0 bytes": "", "a fake PDF": "GIF89a pretending %%EOF"} {
		if a := in.upload(t, res, "application/pdf", body); a.status != 415 || a.body["error"] != "unsupported_media_type" {
			t.Errorf("%s: %d %s", name, a.status, a.raw)
		}
	}
	if a := in.upload(t, res, "text/plain", fakePDF(100)); a.status != 415 {
		t.Errorf("wrong content type: %d %s", a.status, a.raw)
	}

	body := fakePDF(documentLimit)
	heap := watchHeap(t)
	a := in.upload(t, res, "application/pdf", body)
	idle, peak := heap.stop()
	if a.status != 200 {
		t.Fatalf("25 MB exactly: %d %s", a.status, a.raw)
	}
	t.Logf("agreements heap during a 25 MB upload: idle %.1f MB, peak %.1f MB", float64(idle)/1e6, float64(peak)/1e6)
	if peak-idle > 16<<20 {
		t.Errorf("the heap grew by %.1f MB while a 25 MB upload streamed (idle %d, peak %d)", float64(peak-idle)/(1<<20), idle, peak)
	}
	sum := sha256.Sum256([]byte(body))
	if d := obj(agreementOf(a)["document"]); d["checksum"] != "sha256:"+hex.EncodeToString(sum[:]) || d["bytes"] != float64(documentLimit) {
		t.Fatalf("document: %s", a.raw)
	}
	g := in.get(t, docPath)
	if g.status != 200 || g.header.Get("Content-Type") != "application/pdf" || g.header.Get("Content-Length") != strconv.Itoa(documentLimit) || g.raw != body {
		t.Fatalf("download: %d %v, %d bytes", g.status, g.header, len(g.raw))
	}
	if a := in.upload(t, res, "application/pdf", body+"x"); a.status != 413 || a.body["error"] != "payload_too_large" {
		t.Fatalf("25 MB + 1 byte: %d %s", a.status, a.raw)
	}
}

// heapWatch samples the agreements service's heap from its metrics while a
// request runs.
type heapWatch struct {
	url        string
	idle, peak uint64
	done       chan struct{}
	wg         sync.WaitGroup
}

func watchHeap(t *testing.T) *heapWatch {
	t.Helper()
	var ops string
	for _, p := range st.Processes() {
		if p.Name == "agreements" {
			ops = "http://" + p.OpsAddr
		}
	}
	if ops == "" {
		t.Fatal("the agreements service is not running")
	}
	// Collect garbage first, so that idle is the live heap.
	if r, err := http.Get(ops + "/debug/pprof/heap?gc=1"); err == nil {
		r.Body.Close()
	}
	w := &heapWatch{url: ops + "/metrics", done: make(chan struct{})}
	w.idle = w.sample(t)
	w.peak = w.idle
	w.wg.Go(func() {
		for {
			select {
			case <-w.done:
				return
			case <-time.After(5 * time.Millisecond):
				if v := w.sample(t); v > w.peak {
					w.peak = v
				}
			}
		}
	})
	return w
}

func (w *heapWatch) stop() (idle, peak uint64) {
	close(w.done)
	w.wg.Wait()
	return w.idle, w.peak
}

// sample reads the bytes of heap spans in use.
func (w *heapWatch) sample(t *testing.T) uint64 {
	r, err := http.Get(w.url)
	if err != nil {
		t.Errorf("read metrics: %v", err)
		return 0
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Errorf("metric value %q: %v", v, err)
			}
			return uint64(f)
		}
	}
	t.Error("go_memstats_heap_inuse_bytes not found in the metrics")
	return 0
}
