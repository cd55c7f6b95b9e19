// Command testsvc stands in for a Quarters service in the dev stack's tests:
// it serves the API and ops listeners the way the real services do, a
// minimal org and credential admin API, and a route that sends mail through
// the SMTP sink. TESTSVC_* variables make it misbehave on purpose.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/smtp"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	name := os.Getenv("TESTSVC_NAME")
	fmt.Fprintf(os.Stderr, "%s starting\n", name)
	if d, err := time.ParseDuration(os.Getenv("TESTSVC_CRASH_AFTER")); err == nil {
		time.Sleep(d)
		for i := 1; i <= 60; i++ {
			fmt.Fprintf(os.Stderr, "%s log line %d\n", name, i)
		}
		fmt.Fprintf(os.Stderr, "%s: cannot connect to the store\n", name)
		os.Exit(3)
	}
	var orgs atomic.Int64
	token := os.Getenv("QUARTERS_ADMIN_TOKEN")
	api := http.NewServeMux()
	api.HandleFunc("POST /admin/v1/orgs", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			reply(w, 401, map[string]any{"error": "unauthorized", "message": "admin token required"})
			return
		}
		var in struct{ Name string }
		json.NewDecoder(r.Body).Decode(&in)
		id := fmt.Sprintf("org_%d", orgs.Add(1))
		reply(w, 201, map[string]any{"org": map[string]any{"id": id, "name": in.Name}})
	})
	api.HandleFunc("POST /admin/v1/orgs/{id}/credentials", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			reply(w, 401, map[string]any{"error": "unauthorized", "message": "admin token required"})
			return
		}
		reply(w, 201, map[string]any{"credential": map[string]any{
			"clientId": "cid_" + r.PathValue("id"), "clientSecret": "secret-" + r.PathValue("id"), "name": "demo",
			"createdAt": time.Now().UTC().Format(time.RFC3339)}})
	})
	api.HandleFunc("POST /api/v1/inquiries", func(w http.ResponseWriter, r *http.Request) {
		msg := "To: guest@example.com\r\nSubject: We received your inquiry\r\nX-Quarters-Org: org_1\r\nX-Quarters-Inquiry: inq_1\r\n\r\nThanks.\r\n"
		if err := smtp.SendMail(os.Getenv("QUARTERS_SMTP_ADDR"), nil, "no-reply@quarters.test", []string{"guest@example.com"}, []byte(msg)); err != nil {
			reply(w, 500, map[string]any{"error": "internal_error", "message": err.Error()})
			return
		}
		reply(w, 201, map[string]any{"id": "inq_1"})
	})
	api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"service": name, "path": r.URL.Path, "host": r.Host,
			"publicUrl": os.Getenv("QUARTERS_PUBLIC_URL"), "mongo": os.Getenv("QUARTERS_MONGO_URI"),
			"redis": os.Getenv("QUARTERS_REDIS_URL"), "kafka": os.Getenv("QUARTERS_KAFKA_BROKERS"),
			"allowHttp": os.Getenv("QUARTERS_WEBHOOK_ALLOW_HTTP"), "smtp": os.Getenv("QUARTERS_SMTP_ADDR")})
	})
	ops := http.NewServeMux()
	ops.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, map[string]any{"status": "ok"}) })
	ops.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if os.Getenv("TESTSVC_NOT_READY") == "1" {
			reply(w, 503, map[string]any{"status": "not_ready"})
			return
		}
		reply(w, 200, map[string]any{"status": "ready"})
	})
	apiSrv := &http.Server{Addr: os.Getenv("QUARTERS_HTTP_ADDR"), Handler: api}
	opsSrv := &http.Server{Addr: os.Getenv("QUARTERS_OPS_ADDR"), Handler: ops}
	go apiSrv.ListenAndServe()
	go opsSrv.ListenAndServe()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Fprintf(os.Stderr, "%s shutting down\n", name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	apiSrv.Shutdown(ctx)
	opsSrv.Shutdown(ctx)
	fmt.Fprintf(os.Stderr, "%s stopped\n", strings.ToLower(name))
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
