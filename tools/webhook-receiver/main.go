// Command webhook-receiver receives Quarters webhook deliveries, verifies
// their signatures with pkg/client/webhook, drops repeated delivery ids and
// prints one line per event on stdout. It is an example receiver for trying
// webhooks against the dev stack; README.md shows how.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"quarters.dev/pkg/client/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// run serves until ctx ends. ready, when not nil, receives the address
// the server listens on.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("webhook-receiver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9000", "address to listen on (port 0 picks a free one)")
	path := fs.String("path", "/", "path the deliveries are posted to")
	secret := fs.String("secret", os.Getenv("QUARTERS_WEBHOOK_SECRET"), "the endpoint's signing secret (default $QUARTERS_WEBHOOK_SECRET)")
	asJSON := fs.Bool("json", false, "print each delivery's body as one JSON line instead of a summary")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: webhook-receiver -secret SECRET [-listen 127.0.0.1:9000] [-path /] [-json]\n\n"+
			"Verifies each delivery's x-legacy-signature, answers 401 to a wrong one, 200 to a delivery\n"+
			"already handled, 204 otherwise, and prints the event.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *secret == "" {
		fs.Usage()
		return fmt.Errorf("%w: -secret (or QUARTERS_WEBHOOK_SECRET) is required", errUsage)
	}
	if !strings.HasPrefix(*path, "/") {
		return fmt.Errorf("%w: -path must start with /", errUsage)
	}

	var mu sync.Mutex // one line at a time
	h := webhook.Handler(*secret, func(_ context.Context, ev webhook.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if *asJSON {
			_, err := fmt.Fprintf(stdout, "%s\n", ev.Raw)
			return err
		}
		_, err := fmt.Fprintf(stdout, "%s %-19s %s %s\n", ev.CreatedAt.UTC().Format(time.RFC3339), ev.Name, ev.ID, summary(ev.Data))
		return err
	}, webhook.WithLogger(slog.New(slog.NewTextHandler(stderr, nil))))

	mux := http.NewServeMux()
	mux.Handle(*path, h)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	addr := "http://" + ln.Addr().String() + *path
	fmt.Fprintf(stderr, "receiving webhook deliveries on %s\n", addr)
	if ready != nil {
		ready <- addr
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shut)
	}
}

// summary renders an event's data as key=value pairs.
func summary(d webhook.Data) string {
	switch x := d.(type) {
	case webhook.PingData:
		return "webhookId=" + x.WebhookID
	case webhook.ListingData:
		return "listingId=" + x.ListingID
	case webhook.CalendarData:
		return fmt.Sprintf("propertyId=%s from=%s to=%s", x.PropertyID, x.From, x.To)
	case webhook.ReservationData:
		return fmt.Sprintf("reservationId=%s propertyId=%s status=%s", x.ReservationID, x.PropertyID, x.Status)
	case webhook.ReservationUpdatedData:
		return fmt.Sprintf("reservationId=%s propertyId=%s status=%s previousStatus=%s", x.ReservationID, x.PropertyID, x.Status, x.PreviousStatus)
	case webhook.AgreementRequestedData:
		return fmt.Sprintf("reservationId=%s propertyId=%s", x.ReservationID, x.PropertyID)
	case webhook.UnknownData:
		return string(x.Raw)
	}
	return ""
}
