// Command webhooksbench measures webhook delivery end to end on a dev stack
// started for the run on a temporary data directory: a receiver on
// 127.0.0.1 is registered as an org's webhook endpoint, and admin PATCHes
// of reservations (each a new note on a booking in status inquiry, so that
// the bookings service emits exactly one reservation.updated and the
// calendar does not change) are sent at -rate per second for -duration.
// For every delivery it takes the time from the write's answer (and from
// the write's start) to the delivery's arrival, and it counts lost and
// duplicated deliveries by the delivery id header and by the reservation
// id in the body.
//
// Writes to one reservation never overlap: -pool reservations take turns,
// so at 200 writes/s each is written every pool/200 seconds, and the n-th
// delivery for a reservation belongs to its n-th write.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"quarters.dev/tools/devstack/bench/benchkit"
)

func main() {
	rate := flag.Int("rate", 200, "writes per second")
	duration := flag.Duration("duration", 60*time.Second, "how long writes are sent")
	pool := flag.Int("pool", 300, "reservations the writes take turns on")
	workers := flag.Int("workers", 64, "concurrent writers")
	profile := flag.String("profile", "", "directory for CPU profiles taken during the run (the bookings service, the dispatcher and this process, which hosts the ingress, the store and Kafka)")
	flag.Parse()
	log.SetFlags(log.Ltime)
	if err := run(*rate, *duration, *pool, *workers, *profile); err != nil {
		log.Fatal(err)
	}
}

type arrival struct {
	at       time.Time
	delivery string
	event    string
	record   string
}

type receiver struct {
	secret   []byte
	mu       sync.Mutex
	arrivals []arrival
	badSig   atomic.Int64
	last     atomic.Int64 // unix nanoseconds of the last arrival
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	at := time.Now()
	if err != nil {
		w.WriteHeader(400)
		return
	}
	mac := hmac.New(sha256.New, rc.secret)
	mac.Write(raw)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(r.Header.Get("x-legacy-signature"))) {
		rc.badSig.Add(1)
	}
	var body struct {
		ID    string `json:"id"`
		Event string `json:"event"`
		Data  struct {
			ReservationID string `json:"reservationId"`
		} `json:"data"`
	}
	_ = json.Unmarshal(raw, &body)
	rc.mu.Lock()
	rc.arrivals = append(rc.arrivals, arrival{at: at, delivery: r.Header.Get("x-legacy-delivery"), event: body.Event, record: body.Data.ReservationID})
	rc.mu.Unlock()
	rc.last.Store(at.UnixNano())
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.arrivals)
}

type write struct {
	start, answered time.Time
}

func run(rate int, duration time.Duration, poolSize, workers int, profile string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	b, err := benchkit.Start(ctx)
	if err != nil {
		return err
	}
	defer b.Stop()
	orgID, _, err := b.Org(ctx, map[string]any{"name": "Webhooks Bench"})
	if err != nil {
		return err
	}
	fmt.Printf("webhooksbench %s, load average at start %s\n", time.Now().UTC().Format("2006-01-02T15:04Z"), benchkit.LoadAvg())

	// The reservations, before the endpoint exists, so that their
	// reservation.created events are not delivered.
	ids := make([]string, poolSize)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	jobs := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				body := map[string]any{
					"propertyId": fmt.Sprintf("prop_hook_%02d", i%10), "status": "inquiry",
					"guest":   map[string]any{"firstName": "Hook", "lastName": fmt.Sprintf("Guest %d", i), "email": fmt.Sprintf("hook%d@example.com", i)},
					"checkIn": "2027-01-01", "checkOut": "2027-02-01",
				}
				var out struct {
					Reservation struct {
						ID string `json:"id"`
					} `json:"reservation"`
				}
				err := benchkit.Retry(ctx, func() error {
					return b.Admin(ctx, "POST", "/orgs/"+orgID+"/reservations", body, 201, &out)
				}, "rganisation")
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				ids[i] = out.Reservation.ID
				mu.Unlock()
			}
		})
	}
	t0 := time.Now()
	for i := range poolSize {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	log.Printf("created %d reservations in %s", poolSize, time.Since(t0).Round(100*time.Millisecond))
	if err := b.WaitQuiet(ctx, 5*time.Minute); err != nil {
		return err
	}

	// The receiver and the endpoint; a ping proves the path.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rc := &receiver{}
	srv := &http.Server{Handler: rc}
	go srv.Serve(ln)
	defer srv.Close()
	var hook struct {
		Webhook struct {
			ID     string `json:"id"`
			Secret string `json:"secret"`
		} `json:"webhook"`
	}
	if err := b.Admin(ctx, "POST", "/orgs/"+orgID+"/webhooks", map[string]any{"url": "http://" + ln.Addr().String() + "/hook"}, 201, &hook); err != nil {
		return err
	}
	rc.secret = []byte(hook.Webhook.Secret)
	if err := b.Admin(ctx, "POST", "/orgs/"+orgID+"/webhooks/"+hook.Webhook.ID+"/ping", nil, 202, nil); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); rc.count() == 0; {
		if time.Now().After(deadline) {
			return fmt.Errorf("the ping never reached the receiver")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Events of the pool's creation still on their way are delivered now
	// that the endpoint exists: let them pass before measuring.
	for deadline := time.Now().Add(2 * time.Minute); time.Since(time.Unix(0, rc.last.Load())) < 5*time.Second; {
		if time.Now().After(deadline) {
			return fmt.Errorf("deliveries of earlier events still arriving after 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	rc.mu.Lock()
	log.Printf("%d deliveries before the run (the ping and earlier events)", len(rc.arrivals))
	rc.arrivals = rc.arrivals[:0]
	rc.mu.Unlock()

	if profile != "" {
		stopProfiles, err := startProfiles(b, profile, duration)
		if err != nil {
			return err
		}
		defer stopProfiles()
	}

	// The writes: open loop at the rate, a reservation's writes in turn.
	writes := make([][]write, poolSize)
	locks := make([]sync.Mutex, poolSize)
	var failed, late, unsent atomic.Int64
	var writeLat []time.Duration
	var latMu sync.Mutex
	ticks := make(chan int, rate*int(duration/time.Second+1))
	cpu := benchkit.ReadCPU()
	start := time.Now()
	for range workers {
		wg.Go(func() {
			var mine []time.Duration
			for j := range ticks {
				// A write that could not start within the run (plus a few
				// seconds) is not sent: the stack did not keep up.
				if time.Since(start) > duration+5*time.Second {
					unsent.Add(1)
					continue
				}
				i := j % poolSize
				locks[i].Lock()
				body := map[string]any{"notes": fmt.Sprintf("write %d", j)}
				s := time.Now()
				err := b.Admin(ctx, "PATCH", "/orgs/"+orgID+"/reservations/"+ids[i], body, 200, nil)
				a := time.Now()
				if err != nil {
					if failed.Add(1) <= 5 {
						log.Print(err)
					}
				} else {
					writes[i] = append(writes[i], write{start: s, answered: a})
					mine = append(mine, a.Sub(s))
				}
				locks[i].Unlock()
			}
			latMu.Lock()
			writeLat = append(writeLat, mine...)
			latMu.Unlock()
		})
	}
	total := rate * int(duration/time.Second)
	interval := time.Second / time.Duration(rate)
	for j := range total {
		due := start.Add(time.Duration(j) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		select {
		case ticks <- j:
		default:
			late.Add(1) // every worker busy and the queue full
			ticks <- j
		}
	}
	close(ticks)
	wg.Wait()
	sent := time.Since(start)
	written := 0
	for _, w := range writes {
		written += len(w)
	}
	log.Printf("%d writes answered in %s; waiting for the last deliveries", written, sent.Round(100*time.Millisecond))
	var cpuUse string
	for quietSince := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		if rc.count() >= written {
			cpuUse = benchkit.CPUSince(cpu, rc.count(), "delivery")
			// Give duplicates a moment to show.
			time.Sleep(2 * time.Second)
			break
		}
		if time.Unix(0, rc.last.Load()).After(quietSince) {
			quietSince = time.Unix(0, rc.last.Load())
		}
		if time.Since(quietSince) > 15*time.Second {
			cpuUse = benchkit.CPUSince(cpu, rc.count(), "delivery") + " (including 15 s without an arrival)"
			break
		}
	}

	// Matching.
	rc.mu.Lock()
	arrivals := slices.Clone(rc.arrivals)
	rc.mu.Unlock()
	index := map[string]int{}
	for i, id := range ids {
		index[id] = i
	}
	seen := map[string]int{}
	perRecord := make([][]time.Time, poolSize)
	events := map[string]int{}
	var dupIDs, foreign int
	for _, a := range arrivals {
		events[a.event]++
		seen[a.delivery]++
		if seen[a.delivery] > 1 {
			dupIDs++
			continue
		}
		i, ok := index[a.record]
		if a.event != "reservation.updated" || !ok {
			foreign++
			continue
		}
		perRecord[i] = append(perRecord[i], a.at)
	}
	var fromAnswer, fromStart []time.Duration
	var lost, extra, early int
	for i := range perRecord {
		got, want := perRecord[i], writes[i]
		slices.SortFunc(got, func(x, y time.Time) int { return x.Compare(y) })
		for k := range max(len(got), len(want)) {
			switch {
			case k >= len(got):
				lost++
			case k >= len(want):
				extra++
			default:
				d := got[k].Sub(want[k].answered)
				if d < 0 {
					early++
				}
				fromAnswer = append(fromAnswer, d)
				fromStart = append(fromStart, got[k].Sub(want[k].start))
			}
		}
	}
	var first, last time.Time
	for _, a := range arrivals {
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
		if a.at.After(last) {
			last = a.at
		}
	}
	names := make([]string, 0, len(events))
	for n := range events {
		names = append(names, n)
	}
	sort.Strings(names)
	var evs []string
	for _, n := range names {
		evs = append(evs, fmt.Sprintf("%s %d", n, events[n]))
	}

	fmt.Printf("writes: admin PATCH /orgs/{id}/reservations/{id} {notes} through the ingress, target %d/s for %s over %d reservations (status inquiry), %d writers\n",
		rate, duration, poolSize, workers)
	fmt.Printf("  %d answered 200 in %s (%.1f/s), %d failed, %d not sent (due while every writer was busy and not started within the run + 5 s), %d due while every writer was busy; write latency %s\n",
		written, sent.Round(100*time.Millisecond), float64(written)/sent.Seconds(), failed.Load(), unsent.Load(), late.Load(), benchkit.Summarize(writeLat))
	fmt.Printf("deliveries: %d received (%s), %d bad signatures\n", len(arrivals), joinOr(evs), rc.badSig.Load())
	if !first.IsZero() {
		fmt.Printf("  sustained %.1f deliveries/s (first to last arrival, %s)\n", float64(len(arrivals))/last.Sub(first).Seconds(), last.Sub(first).Round(100*time.Millisecond))
	}
	fmt.Printf("  %s, from the first write to the last arrival\n", cpuUse)
	fmt.Printf("  lost %d, duplicated by delivery id %d, extra per reservation id %d, other events %d\n", lost, dupIDs, extra, foreign)
	fmt.Printf("  write answered → arrival: %s (%d arrived before the write's answer)\n", benchkit.Summarize(fromAnswer), early)
	fmt.Printf("  write sent → arrival: %s\n", benchkit.Summarize(fromStart))
	s := benchkit.Summarize(fromAnswer)
	verdict := "met"
	if s.Q(0.99) >= 250 || lost > 0 || dupIDs > 0 || extra > 0 {
		verdict = "missed"
	}
	fmt.Printf("target p99 under 250 ms, none lost, none duplicated: %s (p99 %.1f ms); load average after %s\n", verdict, s.Q(0.99), benchkit.LoadAvg())
	return nil
}

func joinOr(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += ", " + x
	}
	return out
}

// startProfiles takes CPU profiles of the bookings service and the
// dispatcher from their ops ports, and of this process, over most of the
// run; the returned function waits for them.
func startProfiles(b *benchkit.Bench, dir string, d time.Duration) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	secs := max(1, int((d - 5*time.Second).Seconds()))
	var wg sync.WaitGroup
	for _, name := range []string{"bookings", "webhook-dispatcher"} {
		p, err := b.Process(name)
		if err != nil {
			return nil, err
		}
		wg.Go(func() {
			res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.OpsAddr, secs))
			if err != nil {
				log.Printf("profile %s: %v", name, err)
				return
			}
			defer res.Body.Close()
			f, err := os.Create(filepath.Join(dir, name+".pprof"))
			if err != nil {
				log.Print(err)
				return
			}
			defer f.Close()
			io.Copy(f, res.Body)
		})
	}
	f, err := os.Create(filepath.Join(dir, "webhooksbench.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	stop := time.AfterFunc(time.Duration(secs)*time.Second, pprof.StopCPUProfile)
	return func() {
		wg.Wait()
		if stop.Stop() {
			pprof.StopCPUProfile()
		}
		f.Close()
		log.Printf("CPU profiles in %s (go tool pprof -top FILE)", dir)
	}, nil
}
