// Command agreementsbench measures the agreements service through the dev
// stack's ingress, as an integrator meets it: the latency of PUT
// /reservations/{id}/agreement (each request a real change, stored with its
// event), and the throughput of a 25 MB document upload and download with
// the service's heap sampled from its metrics while the upload streams.
//
// It starts a whole dev stack on a temporary data directory, so it needs the
// auth and bookings services (an org, its credentials and a reservation are
// made through the admin API).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"quarters.dev/tools/devstack/config"
	"quarters.dev/tools/devstack/stack"
)

const documentBytes = 25 << 20

func main() {
	puts := flag.Int("puts", 1000, "PUT agreement requests per client")
	clients := flag.Int("clients", 1, "concurrent clients for the PUT measurement, each on its own reservation")
	rounds := flag.Int("rounds", 5, "25 MB uploads and downloads")
	flag.Parse()
	if err := run(*puts, *clients, *rounds); err != nil {
		log.Fatal(err)
	}
}

type bench struct {
	st   *stack.Stack
	auth string
	org  string
	http *http.Client
}

func run(puts, clients, rounds int) error {
	dir, err := os.MkdirTemp("", "quarters-agreementsbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := config.Defaults()
	cfg.Listen, cfg.DataDir, cfg.Demo = "127.0.0.1:0", dir, false
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	log.Print("starting a dev stack (services build first)")
	st, err := stack.Start(ctx, stack.Config{Config: cfg, Output: &out})
	if err != nil {
		return fmt.Errorf("start dev stack: %w\n%s", err, out.String())
	}
	defer st.Stop()
	b := &bench{st: st, http: &http.Client{Timeout: 5 * time.Minute}}
	if err := b.setup(); err != nil {
		return fmt.Errorf("%w\n%s", err, out.String())
	}

	// PUT agreement latency: each client reports on its own reservation,
	// alternating the lessee's status so that every request is a change.
	var mu sync.Mutex
	var lat []time.Duration
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		res, err := b.reservation()
		if err != nil {
			return err
		}
		if _, err := b.put(res, `{"externalId":"env-`+res+`","status":"sent","signers":[{"role":"lessee"},{"role":"lessor"}]}`, 201); err != nil {
			return err
		}
		wg.Go(func() {
			mine := make([]time.Duration, 0, puts)
			for i := range puts {
				st := []string{"viewed", "pending"}[i%2]
				d, err := b.put(res, `{"externalId":"env-`+res+`","status":"sent","signers":[{"role":"lessee","status":"`+st+`"}]}`, 200)
				if err != nil {
					errs <- err
					return
				}
				mine = append(mine, d)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	fmt.Printf("PUT agreement through the ingress: %d requests, %d client(s): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms, %.0f req/s\n",
		len(lat), clients, q(0.5), q(0.9), q(0.99), q(1), float64(len(lat))/elapsed.Seconds())

	// Documents.
	res, err := b.reservation()
	if err != nil {
		return err
	}
	if _, err := b.put(res, `{"externalId":"doc-`+res+`","status":"completed"}`, 201); err != nil {
		return err
	}
	body := pdf(documentBytes)
	var up, down []float64
	var growth []uint64
	for range rounds {
		w, err := b.watchHeap()
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := b.upload(res, body); err != nil {
			return err
		}
		upTime := time.Since(t0)
		idle, peak := w.stop()
		up = append(up, documentBytes/upTime.Seconds()/1e6)
		growth = append(growth, peak-idle)

		t0 = time.Now()
		n, err := b.download(res)
		if err != nil {
			return err
		}
		if n != documentBytes {
			return fmt.Errorf("downloaded %d bytes, want %d", n, documentBytes)
		}
		down = append(down, documentBytes/time.Since(t0).Seconds()/1e6)
	}
	slices.Sort(up)
	slices.Sort(down)
	slices.Sort(growth)
	fmt.Printf("25 MB upload through the ingress: median %.1f MB/s (min %.1f, max %.1f) over %d rounds\n", up[len(up)/2], up[0], up[len(up)-1], rounds)
	fmt.Printf("25 MB download through the ingress: median %.1f MB/s (min %.1f, max %.1f)\n", down[len(down)/2], down[0], down[len(down)-1])
	fmt.Printf("agreements heap in use during an upload, above idle: median %.1f MB, max %.1f MB (target < 16 MB)\n",
		float64(growth[len(growth)/2])/(1<<20), float64(growth[len(growth)-1])/(1<<20))
	return nil
}

func (b *bench) do(method, url, auth, contentType string, body io.Reader) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", auth)
	res, err := b.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res, raw, err
}

func (b *bench) admin(method, path, body string, want int) (map[string]any, error) {
	res, raw, err := b.do(method, b.st.AdminURL+path, "Bearer "+b.st.AdminToken, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

func (b *bench) setup() error {
	o, err := b.admin("POST", "/orgs", `{"name":"Agreements Bench","contractProvider":"external"}`, 201)
	if err != nil {
		return err
	}
	b.org = o["org"].(map[string]any)["id"].(string)
	c, err := b.admin("POST", "/orgs/"+b.org+"/credentials", `{"name":"bench"}`, 201)
	if err != nil {
		return err
	}
	cred := c["credential"].(map[string]any)
	res, err := http.PostForm(b.st.BaseURL+"/oauth2/token", map[string][]string{
		"grant_type": {"client_credentials"}, "client_id": {cred["clientId"].(string)}, "client_secret": {cred["clientSecret"].(string)},
	})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		return fmt.Errorf("mint token: %v", err)
	}
	b.auth = "Bearer " + tok.AccessToken
	return nil
}

// reservation books through the admin API and waits until the agreements
// service knows the booking.
func (b *bench) reservation() (string, error) {
	r, err := b.admin("POST", "/orgs/"+b.org+"/reservations", `{"propertyId":"prop_bench","status":"inquiry",
		"guest":{"firstName":"Bench","lastName":"Mark","email":"bench@example.com"},"checkIn":"2027-01-01","checkOut":"2027-02-01"}`, 201)
	if err != nil {
		return "", err
	}
	id := r["reservation"].(map[string]any)["id"].(string)
	deadline := time.Now().Add(time.Minute)
	for {
		res, raw, err := b.do("GET", b.st.BaseURL+"/reservations/"+id+"/agreement", b.auth, "", nil)
		if err == nil && res.StatusCode == 200 {
			return id, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("reservation %s never reached the agreements service: %v %s", id, err, raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *bench) put(res, body string, want int) (time.Duration, error) {
	t0 := time.Now()
	r, raw, err := b.do("PUT", b.st.BaseURL+"/reservations/"+res+"/agreement", b.auth, "application/json", strings.NewReader(body))
	d := time.Since(t0)
	if err != nil {
		return d, err
	}
	if r.StatusCode != want {
		return d, fmt.Errorf("PUT agreement: %d %s", r.StatusCode, raw)
	}
	return d, nil
}

func (b *bench) upload(res string, body []byte) error {
	r, raw, err := b.do("PUT", b.st.BaseURL+"/reservations/"+res+"/agreement/document", b.auth, "application/pdf", bytes.NewReader(body))
	if err != nil {
		return err
	}
	if r.StatusCode != 200 {
		return fmt.Errorf("upload: %d %s", r.StatusCode, raw)
	}
	return nil
}

func (b *bench) download(res string) (int64, error) {
	req, err := http.NewRequest("GET", b.st.BaseURL+"/reservations/"+res+"/agreement/document", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", b.auth)
	r, err := b.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		return 0, fmt.Errorf("download: %d", r.StatusCode)
	}
	return io.Copy(io.Discard, r.Body)
}

func pdf(n int) []byte {
	b := bytes.Repeat([]byte("0123456789abcdef\n"), n/17+1)[:n]
	copy(b, "%PDF-1.7\n")
	copy(b[n-7:], "%%EOF\n\n")
	return b
}

type heapWatch struct {
	url        string
	idle, peak uint64
	err        error
	done       chan struct{}
	wg         sync.WaitGroup
}

// watchHeap collects garbage in the agreements process, reads its idle heap,
// and samples it every few milliseconds until stop.
func (b *bench) watchHeap() (*heapWatch, error) {
	var ops string
	for _, p := range b.st.Processes() {
		if p.Name == "agreements" {
			ops = "http://" + p.OpsAddr
		}
	}
	if ops == "" {
		return nil, fmt.Errorf("the agreements service is not running")
	}
	if r, err := http.Get(ops + "/debug/pprof/heap?gc=1"); err == nil {
		r.Body.Close()
	}
	w := &heapWatch{url: ops + "/metrics", done: make(chan struct{})}
	var err error
	if w.idle, err = heapInUse(w.url); err != nil {
		return nil, err
	}
	w.peak = w.idle
	w.wg.Go(func() {
		for {
			select {
			case <-w.done:
				return
			case <-time.After(5 * time.Millisecond):
				v, err := heapInUse(w.url)
				if err != nil {
					w.err = err
					return
				}
				w.peak = max(w.peak, v)
			}
		}
	})
	return w, nil
}

func (w *heapWatch) stop() (idle, peak uint64) {
	close(w.done)
	w.wg.Wait()
	if w.err != nil {
		log.Printf("heap sampling stopped early: %v", w.err)
	}
	return w.idle, w.peak
}

func heapInUse(url string) (uint64, error) {
	r, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return uint64(f), err
		}
	}
	return 0, fmt.Errorf("go_memstats_heap_inuse_bytes not in %s", url)
}
