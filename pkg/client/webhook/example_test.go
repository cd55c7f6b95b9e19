package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"quarters.dev/pkg/client/webhook"
)

// A receiver mounts Handler on its mux; the handler verifies, dedupes and
// decodes, and the function sees typed events only.
func ExampleHandler() {
	const secret = "whsec_example"
	h := webhook.Handler(secret, func(ctx context.Context, ev webhook.Event) error {
		switch d := ev.Data.(type) {
		case webhook.ReservationUpdatedData:
			fmt.Printf("%s: %s %s -> %s\n", ev.Name, d.ReservationID, d.PreviousStatus, d.Status)
		case webhook.PingData:
			fmt.Printf("ping from %s\n", d.WebhookID)
		default:
			fmt.Printf("%s ignored\n", ev.Name)
		}
		return nil
	})
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/quarters", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	deliver := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/quarters", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-legacy-event", "reservation.updated")
		req.Header.Set("x-legacy-delivery", "d-1")
		req.Header.Set("x-legacy-signature", webhook.Sign(secret, []byte(body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	body := `{"id":"d-1","event":"reservation.updated","createdAt":"2026-05-01T10:00:00.000Z",` +
		`"data":{"reservationId":"r-1","propertyId":"p-1","status":"confirmed","previousStatus":"reserved"}}`
	fmt.Println(deliver(body))
	fmt.Println(deliver(body)) // the same delivery again: acknowledged, not handled
	// Output:
	// reservation.updated: r-1 reserved -> confirmed
	// 204
	// 200
}

func ExampleVerify() {
	body := []byte(`{"id":"d-2","event":"ping","createdAt":"2026-05-01T10:00:00.000Z","data":{"webhookId":"wh_1"}}`)
	header := webhook.Sign("whsec_example", body)
	fmt.Println(webhook.Verify("whsec_example", body, header))
	fmt.Println(webhook.Verify("whsec_other", body, header))
	// Output:
	// <nil>
	// webhook: signature does not match the body
}
