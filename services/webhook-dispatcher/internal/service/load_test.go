package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"google.golang.org/protobuf/proto"

	"quarters.dev/services/webhook-dispatcher/internal/domain"
)

// TestSustainedDeliveries is the load benchmark (tools/devstack/bench/
// webhooks.sh, part of `make bench`): domain events are published at a
// steady rate, as a producer's outbox relay publishes them, and a loopback
// HTTPS receiver notes when each arrives. It reports deliveries per second
// and the latency from the publish to the receiver, and fails on a lost or
// duplicated delivery or when p99 exceeds the target. It runs only when
// QUARTERS_WEBHOOK_BENCH is set; QUARTERS_WEBHOOK_BENCH_RATE (events per
// second, default 200) and QUARTERS_WEBHOOK_BENCH_SECONDS (default 60) set
// the load.
func TestSustainedDeliveries(t *testing.T) {
	if os.Getenv("QUARTERS_WEBHOOK_BENCH") == "" {
		t.Skip("load benchmark: set QUARTERS_WEBHOOK_BENCH=1 (tools/devstack/bench/webhooks.sh)")
	}
	rate := envInt("QUARTERS_WEBHOOK_BENCH_RATE", 200)
	seconds := envInt("QUARTERS_WEBHOOK_BENCH_SECONDS", 60)
	target := 250 * time.Millisecond

	e := stores(t)
	h := start(t, e, testConfig(e))
	org := h.newOrg()

	total := rate * seconds
	sentAt := make([]time.Time, total)
	arrivals := make([]time.Duration, 0, total)
	counts := make([]int, total)
	var mu sync.Mutex
	var secret string
	var bad int
	allIn := make(chan struct{})
	recv := newReceiver(t)
	recv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		now := time.Now()
		var b struct {
			Data struct {
				ReservationID string `json:"reservationId"`
			} `json:"data"`
		}
		_ = json.Unmarshal(raw, &b)
		i, err := strconv.Atoi(b.Data.ReservationID)
		mu.Lock()
		defer mu.Unlock()
		if err != nil || i < 0 || i >= total || !domain.VerifySignature(secret, raw, r.Header.Get("x-legacy-signature")) {
			bad++
			return
		}
		counts[i]++
		if counts[i] == 1 {
			arrivals = append(arrivals, now.Sub(sentAt[i]))
			if len(arrivals) == total {
				close(allIn)
			}
		}
	})
	_, sec := h.register(org, recv.srv.URL)
	mu.Lock()
	secret = sec
	mu.Unlock()

	// Messages are built up front, so the publisher does nothing but publish.
	msgs := make([]kafka.Message, total)
	for i := range total {
		id := strconv.Itoa(i)
		b, _ := proto.Marshal(reservationCreated(org, id))
		msgs[i] = kafka.Message{Topic: e.prefix + "reservations", Key: []byte(id), Value: b}
	}
	interval := time.Second / time.Duration(rate)
	begin := time.Now()
	var pub sync.WaitGroup
	for i := range total {
		if d := time.Until(begin.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		mu.Lock()
		sentAt[i] = time.Now()
		mu.Unlock()
		pub.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := h.writer.WriteMessages(ctx, msgs[i]); err != nil {
				t.Errorf("publish %d: %v", i, err)
			}
		})
	}
	pub.Wait()
	publishedIn := time.Since(begin)
	select {
	case <-allIn:
	case <-time.After(60 * time.Second):
	}
	elapsed := time.Since(begin)
	time.Sleep(2 * time.Second) // room for a duplicate to show up

	mu.Lock()
	defer mu.Unlock()
	lost, dup := 0, 0
	for _, c := range counts {
		switch {
		case c == 0:
			lost++
		case c > 1:
			dup += c - 1
		}
	}
	lat := slices.Clone(arrivals)
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	report := fmt.Sprintf("webhooks: %d events at %d/s (published in %.1fs): %d delivered in %.1fs = %.0f deliveries/s; publish→receiver p50 %s p90 %s p99 %s max %s; lost %d, duplicated %d, rejected %d",
		total, rate, publishedIn.Seconds(), len(arrivals), elapsed.Seconds(), float64(len(arrivals))/elapsed.Seconds(),
		pct(.50).Round(time.Millisecond), pct(.90).Round(time.Millisecond), pct(.99).Round(time.Millisecond), pct(1).Round(time.Millisecond), lost, dup, bad)
	t.Log(report)
	fmt.Println(report)
	if lost > 0 || dup > 0 || bad > 0 {
		t.Errorf("lost %d, duplicated %d, rejected %d", lost, dup, bad)
	}
	if p99 := pct(.99); p99 > target {
		t.Errorf("p99 %s above the target %s", p99, target)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
