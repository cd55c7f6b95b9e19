package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"quarters.dev/pkg/client/webhook"
	"quarters.dev/pkg/testenv"
)

func start(t *testing.T, args ...string) (string, *testenv.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut testenv.Buffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"-listen", "127.0.0.1:0"}, args...), &out, &errOut, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("receiver stopped: %v\n%s", err, errOut.String())
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("receiver: %v", err)
		}
	})
	return addr, &out
}

func post(t *testing.T, url, secret, id, event, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-legacy-event", event)
	req.Header.Set("x-legacy-delivery", id)
	req.Header.Set("x-legacy-signature", webhook.Sign(secret, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestPrintsVerifiedEventsOnce(t *testing.T) {
	addr, out := start(t, "-secret", "whsec_1", "-path", "/hooks")
	ping := `{"id":"d-1","event":"ping","createdAt":"2026-11-20T10:00:00.000Z","data":{"webhookId":"wh_1"}}`
	upd := `{"id":"d-2","event":"reservation.updated","createdAt":"2026-11-20T10:01:00.000Z","data":{"reservationId":"r-1","propertyId":"p-1","status":"confirmed","previousStatus":"reserved"}}`
	if got := post(t, addr, "whsec_1", "d-1", "ping", ping); got != http.StatusNoContent {
		t.Errorf("ping: %d, want 204", got)
	}
	if got := post(t, addr, "whsec_1", "d-1", "ping", ping); got != http.StatusOK {
		t.Errorf("repeated ping: %d, want 200", got)
	}
	if got := post(t, addr, "whsec_wrong", "d-2", "reservation.updated", upd); got != http.StatusUnauthorized {
		t.Errorf("wrong signature: %d, want 401", got)
	}
	if got := post(t, addr, "whsec_1", "d-2", "reservation.updated", upd); got != http.StatusNoContent {
		t.Errorf("update: %d, want 204", got)
	}
	want := "2026-11-20T10:00:00Z ping                d-1 webhookId=wh_1\n" +
		"2026-11-20T10:01:00Z reservation.updated d-2 reservationId=r-1 propertyId=p-1 status=confirmed previousStatus=reserved\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestJSONLines(t *testing.T) {
	addr, out := start(t, "-secret", "s", "-json")
	body := `{"id":"d-9","event":"listing.deleted","createdAt":"2026-11-20T10:00:00.000Z","data":{"listingId":"l-1"}}`
	if got := post(t, addr, "s", "d-9", "listing.deleted", body); got != http.StatusNoContent {
		t.Fatalf("%d, want 204", got)
	}
	if out.String() != body+"\n" {
		t.Errorf("printed %q, want the body", out.String())
	}
}

func TestSecretRequired(t *testing.T) {
	t.Setenv("QUARTERS_WEBHOOK_SECRET", "")
	var out, errOut bytes.Buffer
	err := run(context.Background(), nil, &out, &errOut, nil)
	if err == nil || !strings.Contains(err.Error(), "-secret") {
		t.Errorf("run without a secret: %v", err)
	}
}
