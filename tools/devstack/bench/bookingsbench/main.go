// Command bookingsbench measures the bookings service on a dev stack started
// for the run on a temporary data directory (embedded FerretDB store):
//
//  1. GET /api/v1/reservations?limit=100 with a status list, a property, a
//     check-in window and an explicit sort, on an org with -n reservations
//     (seeded through the admin API, concurrently): latency through the
//     ingress under -list-clients concurrent clients, then, one request at
//     a time, the service on its own API port against the bare MongoDB
//     driver query with the same filter, sort, limit and projection on the
//     same store (and the count the service runs for a full page);
//  2. POST /api/v1/inquiries through the ingress from -inquiry-conns
//     concurrent connections for -inquiry-duration: throughput and latency.
//     The benchmark org is created with inquiryDailyLimit 1 000 000 (the most the admin API accepts) so that
//     the allowance never answers 429.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"quarters.dev/tools/devstack/bench/benchkit"
)

type flags struct {
	n, properties, workers  int
	seed                    string
	listClients             int
	listDuration            time.Duration
	rounds                  int
	inquiryConns            int
	inquiryDuration         time.Duration
	skipList, skipInquiries bool
}

func main() {
	var f flags
	flag.IntVar(&f.n, "n", 20000, "reservations to seed")
	flag.IntVar(&f.properties, "properties", 20, "properties the reservations are spread over")
	flag.IntVar(&f.workers, "workers", 8, "concurrent admin requests while seeding through the admin API")
	flag.StringVar(&f.seed, "seed", "store", "how reservations are seeded: api (every one through the admin API) or store (three through the admin API, copied in the store)")
	flag.IntVar(&f.listClients, "list-clients", 2, "concurrent clients for the list latency through the ingress")
	flag.DurationVar(&f.listDuration, "list-duration", 30*time.Second, "duration of the list latency run")
	flag.IntVar(&f.rounds, "rounds", 5, "requests of each kind in the service/bare comparison")
	flag.IntVar(&f.inquiryConns, "inquiry-conns", 50, "concurrent connections posting inquiries")
	flag.DurationVar(&f.inquiryDuration, "inquiry-duration", 20*time.Second, "duration of the inquiry run")
	flag.StringVar(&checkInFrom, "checkin-from", checkInFrom, "checkInFrom of the list query")
	flag.StringVar(&checkInTo, "checkin-to", checkInTo, "checkInTo of the list query")
	flag.BoolVar(&f.skipList, "skip-list", false, "skip the list benchmark (and the seeding)")
	flag.BoolVar(&f.skipInquiries, "skip-inquiries", false, "skip the inquiry benchmark")
	flag.Parse()
	log.SetFlags(log.Ltime)
	if err := run(f); err != nil {
		log.Fatal(err)
	}
}

func run(f flags) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	b, err := benchkit.Start(ctx)
	if err != nil {
		return err
	}
	defer b.Stop()
	orgID, auth, err := b.Org(ctx, map[string]any{"name": "Bookings Bench", "inquiryDailyLimit": 1_000_000})
	if err != nil {
		return err
	}
	fmt.Printf("bookingsbench %s, load average at start %s\n", time.Now().UTC().Format("2006-01-02T15:04Z"), benchkit.LoadAvg())
	if !f.skipList {
		if err := listBench(ctx, b, f, orgID, auth); err != nil {
			return fmt.Errorf("%w\nlast lines of the bookings log:\n%s", err, b.LogTail("bookings", 20))
		}
	}
	if !f.skipInquiries {
		if err := inquiryBench(ctx, b, f, orgID, auth); err != nil {
			return fmt.Errorf("%w\nlast lines of the bookings log:\n%s", err, b.LogTail("bookings", 20))
		}
	}
	return nil
}

var statuses = []string{"inquiry", "reserved", "confirmed"}

func propertyID(p int) string { return fmt.Sprintf("prop_bench_%02d", p) }

// reservationBody is reservation i of the seed: the (i / properties)-th
// stay of property i % properties, a week long, eight days after the one
// before, so that reserved and confirmed stays never overlap; the statuses
// take turns.
func reservationBody(f flags, i int) map[string]any {
	in := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 8*(i/f.properties))
	return map[string]any{
		"propertyId": propertyID(i % f.properties), "status": statuses[(i/f.properties)%3],
		"guest":   map[string]any{"firstName": "Guest", "lastName": fmt.Sprintf("Number %d", i), "email": fmt.Sprintf("guest%d@example.com", i)},
		"checkIn": in.Format("2006-01-02"), "checkOut": in.AddDate(0, 0, 7).Format("2006-01-02"),
		"adults": 1 + i%3, "pricing": map[string]any{"rentCents": 150000 + i%1000*100, "depositCents": 300000, "rateBasis": "monthly"},
		"notes": "seeded for the bookings benchmark",
	}
}

// seedAPI creates the reservations whose numbers come from jobs through the
// admin API, f.workers at a time, and counts them in done.
func seedAPI(ctx context.Context, b *benchkit.Bench, f flags, orgID string, jobs []int, done *atomic.Int64) error {
	ch := make(chan int)
	errs := make(chan error, f.workers)
	var wg sync.WaitGroup
	for range f.workers {
		wg.Go(func() {
			for i := range ch {
				body := reservationBody(f, i)
				err := benchkit.Retry(ctx, func() error {
					return b.Admin(ctx, "POST", "/orgs/"+orgID+"/reservations", body, 201, nil)
				}, "rganisation", "concurrently")
				if err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		})
	}
	var err error
feed:
	for _, i := range jobs {
		select {
		case ch <- i:
		case err = <-errs:
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// seed creates f.n reservations of orgID, printing progress. With -seed
// api every one goes through the admin API. With -seed store the first
// reservation of each status goes through the admin API, and the others
// are copies of the stored document of their status with their own id,
// guest, property, dates, guests, rent and timestamps, inserted into the
// bookings service's collection in batches, with no pending events.
func seed(ctx context.Context, b *benchkit.Bench, f flags, orgID string, coll *mongo.Collection) error {
	var done atomic.Int64
	t0 := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				n := done.Load()
				log.Printf("seeded %d/%d reservations (%.0f/s)", n, f.n, float64(n)/time.Since(t0).Seconds())
			}
		}
	}()
	var how string
	switch f.seed {
	case "api":
		jobs := make([]int, f.n)
		for i := range jobs {
			jobs[i] = i
		}
		if err := seedAPI(ctx, b, f, orgID, jobs, &done); err != nil {
			return err
		}
		how = fmt.Sprintf("every one through POST /admin/v1/orgs/{id}/reservations, %d concurrent", f.workers)
	case "store":
		if f.n < 3*f.properties {
			return fmt.Errorf("-n must be at least 3 × -properties")
		}
		firsts := []int{0, f.properties, 2 * f.properties} // inquiry, reserved, confirmed
		if err := seedAPI(ctx, b, f, orgID, firsts, &done); err != nil {
			return err
		}
		tpl := map[string]bson.D{}
		for _, i := range firsts {
			var d bson.D
			body := reservationBody(f, i)
			err := coll.FindOne(ctx, bson.D{{Key: "orgId", Value: orgID}, {Key: "propertyId", Value: body["propertyId"]},
				{Key: "checkIn", Value: body["checkIn"]}}).Decode(&d)
			if err != nil {
				return fmt.Errorf("read the stored reservation %d: %w", i, err)
			}
			tpl[body["status"].(string)] = d
		}
		var batch []any
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				return fmt.Errorf("insert seeded reservations: %w", err)
			}
			done.Add(int64(len(batch)))
			batch = batch[:0]
			return nil
		}
		for i := range f.n {
			if slices.Contains(firsts, i) {
				continue
			}
			body := reservationBody(f, i)
			d := clone(tpl[body["status"].(string)])
			guest := body["guest"].(map[string]any)
			at := time.Now().UTC().Truncate(time.Millisecond)
			for _, kv := range []struct {
				path []string
				v    any
			}{
				{[]string{"_id"}, newID("res_")}, {[]string{"guest", "id"}, newID("gst_")},
				{[]string{"guest", "lastName"}, guest["lastName"]}, {[]string{"guest", "email"}, guest["email"]},
				{[]string{"propertyId"}, body["propertyId"]}, {[]string{"checkIn"}, body["checkIn"]}, {[]string{"checkOut"}, body["checkOut"]},
				{[]string{"adults"}, int32(body["adults"].(int))},
				{[]string{"pricing", "rentCents"}, int64(body["pricing"].(map[string]any)["rentCents"].(int))},
				{[]string{"createdAt"}, at}, {[]string{"updatedAt"}, at},
				{[]string{"outbox"}, bson.A{}}, {[]string{"outboxPending"}, int32(0)},
			} {
				if err := set(d, kv.path, kv.v); err != nil {
					return err
				}
			}
			batch = append(batch, d)
			if len(batch) == 500 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		how = "3 through POST /admin/v1/orgs/{id}/reservations (one per status), the others copies of those documents inserted into the store in batches of 500"
	default:
		return fmt.Errorf("-seed must be api or store")
	}
	n, err := coll.CountDocuments(ctx, bson.D{{Key: "orgId", Value: orgID}})
	if err != nil {
		return err
	}
	if n != int64(f.n) {
		return fmt.Errorf("the store holds %d reservations of the org, want %d", n, f.n)
	}
	el := time.Since(t0)
	fmt.Printf("seeding: %d reservations over %d properties, %s: %s (%.0f/s)\n",
		f.n, f.properties, how, el.Round(100*time.Millisecond), float64(f.n)/el.Seconds())
	return nil
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// clone copies a document deeply enough for set.
func clone(d bson.D) bson.D {
	out := make(bson.D, len(d))
	for i, e := range d {
		if sub, ok := e.Value.(bson.D); ok {
			e.Value = clone(sub)
		}
		out[i] = e
	}
	return out
}

// set replaces the value at path, which must exist.
func set(d bson.D, path []string, v any) error {
	for i := range d {
		if d[i].Key != path[0] {
			continue
		}
		if len(path) == 1 {
			d[i].Value = v
			return nil
		}
		sub, ok := d[i].Value.(bson.D)
		if !ok {
			return fmt.Errorf("field %s of the stored reservation is %T, not a document", path[0], d[i].Value)
		}
		return set(sub, path[1:], v)
	}
	return fmt.Errorf("the stored reservation has no field %s", strings.Join(path, "."))
}

// The list query of the benchmark and the same query written for the
// driver, as the bookings service's reservation repository builds it
// (services/bookings/internal/adapters.ListFilter, ListSort and List):
// equality on orgId and deleted, $in on status, equality on propertyId,
// $gte/$lte on checkIn as YYYY-MM-DD strings; sort on the key then _id in
// the query's direction; the outbox projected away; a full page is
// followed by a count of the filter.
const listProperty = 3

// The check-in window of the list query (-checkin-from, -checkin-to).
var checkInFrom, checkInTo = "2026-01-01", "2034-12-31"

func listPath() string {
	q := url.Values{
		"status": {"reserved,confirmed"}, "propertyId": {propertyID(listProperty)},
		"checkInFrom": {checkInFrom}, "checkInTo": {checkInTo}, "sort": {"checkIn"}, "order": {"desc"}, "limit": {"100"},
	}
	return "/api/v1/reservations?" + q.Encode()
}

func bareFilter(orgID string) bson.D {
	return bson.D{
		{Key: "orgId", Value: orgID}, {Key: "deleted", Value: false},
		{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{"reserved", "confirmed"}}}},
		{Key: "propertyId", Value: propertyID(listProperty)},
		{Key: "checkIn", Value: bson.D{{Key: "$gte", Value: checkInFrom}, {Key: "$lte", Value: checkInTo}}},
	}
}

func bareOptions() *options.FindOptionsBuilder {
	return options.Find().SetSort(bson.D{{Key: "checkIn", Value: -1}, {Key: "_id", Value: -1}}).
		SetSkip(0).SetLimit(100).SetProjection(bson.D{{Key: "outbox", Value: 0}})
}

type page struct {
	Reservations []struct {
		ID string `json:"id"`
	} `json:"reservations"`
	Total int64 `json:"total"`
}

func listBench(ctx context.Context, b *benchkit.Bench, f flags, orgID, auth string) error {
	bookings, err := b.Process("bookings")
	if err != nil {
		return err
	}
	client, err := mongo.Connect(options.Client().ApplyURI(b.St.MongoURI))
	if err != nil {
		return err
	}
	defer client.Disconnect(context.WithoutCancel(ctx))
	coll := client.Database("quarters_bookings").Collection("reservations")
	if err := seed(ctx, b, f, orgID, coll); err != nil {
		return err
	}
	if err := b.WaitQuiet(ctx, 10*time.Minute); err != nil {
		return err
	}
	filter := bareFilter(orgID)

	bare := func() ([]bson.Raw, error) {
		cur, err := coll.Find(ctx, filter, bareOptions())
		if err != nil {
			return nil, err
		}
		var docs []bson.Raw
		return docs, cur.All(ctx, &docs)
	}
	count := func() (int64, error) { return coll.CountDocuments(ctx, filter) }
	direct := "http://" + bookings.APIAddr + listPath()
	ingress := b.St.IngressURL + listPath()
	get := func(u string) (page, error) {
		code, raw, err := b.Do(ctx, "GET", u, auth, nil)
		if err != nil {
			return page{}, err
		}
		if code != 200 {
			return page{}, fmt.Errorf("GET %s: %d %s", u, code, raw)
		}
		var p page
		return p, json.Unmarshal(raw, &p)
	}

	// The same rows in the same order, and the same total. The service may
	// fail while its store connections are busy (see its log); it is tried
	// a few times, and the comparison is made only when it answers.
	docs, err := bare()
	if err != nil {
		return err
	}
	total, err := count()
	if err != nil {
		return err
	}
	fmt.Printf("GET %s: the bare query finds a page of %d of %d matching reservations\n", listPath(), len(docs), total)
	var p page
	for try := 1; try <= 3; try++ {
		if p, err = get(direct); err == nil {
			break
		}
		log.Printf("try %d: %v", try, err)
	}
	if err != nil {
		fmt.Printf("the service failed 3 times in a row: %v\nlast lines of its log:\n%s\n", err, b.LogTail("bookings", 6))
	} else {
		if len(docs) != len(p.Reservations) || total != p.Total {
			return fmt.Errorf("the bare query found %d rows of %d, the service %d of %d", len(docs), total, len(p.Reservations), p.Total)
		}
		for i, d := range docs {
			if id := d.Lookup("_id").StringValue(); id != p.Reservations[i].ID {
				return fmt.Errorf("row %d: bare query %s, service %s", i, id, p.Reservations[i].ID)
			}
		}
		fmt.Printf("the service answers the same ids in the same order and the same total\n")
	}

	// Through the ingress, concurrent clients.
	var mu sync.Mutex
	var lat []time.Duration
	var failed atomic.Int64
	deadline := time.Now().Add(f.listDuration)
	t0 := time.Now()
	var wg sync.WaitGroup
	for range f.listClients {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) {
				s := time.Now()
				if _, err := get(ingress); err != nil {
					failed.Add(1)
					log.Print(err)
					continue
				}
				mine = append(mine, time.Since(s))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	el := time.Since(t0)
	s := benchkit.Summarize(lat)
	fmt.Printf("through the ingress, %d clients for %s: %.1f req/s, %s, %d failed; load average after %s\n",
		f.listClients, f.listDuration, float64(len(lat))/el.Seconds(), s, failed.Load(), benchkit.LoadAvg())

	// One request at a time, interleaved: the service on its API port, the
	// bare find, the bare find followed by the count.
	var svc, find, findCount, svcFailed []time.Duration
	for range f.rounds {
		s := time.Now()
		if _, err := get(direct); err != nil {
			log.Print(err)
			svcFailed = append(svcFailed, time.Since(s))
		} else {
			svc = append(svc, time.Since(s))
		}
		s = time.Now()
		if _, err := bare(); err != nil {
			return err
		}
		find = append(find, time.Since(s))
		s = time.Now()
		if _, err := bare(); err != nil {
			return err
		}
		if _, err := count(); err != nil {
			return err
		}
		findCount = append(findCount, time.Since(s))
	}
	ss, fs, fcs := benchkit.Summarize(svc), benchkit.Summarize(find), benchkit.Summarize(findCount)
	fmt.Printf("one at a time, %d rounds interleaved; load average after %s:\n", f.rounds, benchkit.LoadAvg())
	fmt.Printf("  service on its API port (%s): %s; %d failed (%s)\n", bookings.APIAddr, ss, len(svcFailed), benchkit.Summarize(svcFailed))
	fmt.Printf("  bare driver find, same filter/sort/limit/projection: %s\n", fs)
	fmt.Printf("  bare driver find + count (what the service runs for a full page): %s\n", fcs)
	if len(ss) > 0 {
		fmt.Printf("  service / bare find + count: %.0f%% at p50 (target at most 120%%); service / bare find alone: %.0f%% at p50\n",
			100*ss.Q(0.5)/fcs.Q(0.5), 100*ss.Q(0.5)/fs.Q(0.5))
	}
	return nil
}

func inquiryBench(ctx context.Context, b *benchkit.Bench, f flags, orgID, auth string) error {
	draft := map[string]any{
		"nickname": "Inquiry Bench", "active": true, "isListed": true, "propertyType": "Apartment", "roomType": "Entire home/apt",
		"address":      map[string]any{"street": "Teststraat 1", "postalCode": "1000", "city": "Amsterdam", "country": "NL"},
		"accommodates": 2, "timezone": "Europe/Amsterdam",
		"pricing":     map[string]any{"monthlyRateCents": 150000, "depositCents": 300000, "rateBasis": "monthly"},
		"description": map[string]any{"title": "A furnished apartment"},
		"images": []any{map[string]any{"isPrimary": true, "caption": nil, "sortOrder": 1, "width": 2400, "height": 1600,
			"bytes": 800000, "url": "https://uploads.example/bench/1.jpg"}},
	}
	var prop struct {
		Property struct {
			ID string `json:"id"`
		} `json:"property"`
	}
	if err := benchkit.Retry(ctx, func() error {
		return b.Admin(ctx, "POST", "/orgs/"+orgID+"/properties", draft, 201, &prop)
	}, "rganisation"); err != nil {
		return err
	}
	var listing struct {
		Listing struct {
			ID string `json:"id"`
		} `json:"listing"`
	}
	if err := b.Admin(ctx, "POST", "/orgs/"+orgID+"/properties/"+prop.Property.ID+"/publish", nil, 200, &listing); err != nil {
		return err
	}
	body := func(i int) []byte {
		raw, _ := json.Marshal(map[string]any{
			"propertyId": listing.Listing.ID, "firstName": "Emma", "lastName": fmt.Sprintf("Jansen %d", i),
			"email": fmt.Sprintf("emma%d@example.com", i), "phone": "+31 20 123 4567",
			"checkIn": "2027-03-01", "checkOut": "2027-06-01", "adults": 2, "children": 1,
			"message": "Is the apartment still available for these dates? We are a family of three.",
			"locale":  "en", "source": "website", "metadata": map[string]any{"utm_source": "newsletter", "form": "contact"},
		})
		return raw
	}
	u := b.St.BaseURL + "/inquiries"
	// The listing reaches the bookings service as an event.
	if err := benchkit.Retry(ctx, func() error {
		code, raw, err := b.Do(ctx, "POST", u, auth, body(0))
		if err == nil && code != 201 {
			err = fmt.Errorf("POST /inquiries answered %d: %s", code, raw)
		}
		return err
	}, "propertyId"); err != nil {
		return err
	}
	if err := b.WaitQuiet(ctx, 5*time.Minute); err != nil {
		return err
	}
	var mu sync.Mutex
	var lat []time.Duration
	codes := map[int]int{}
	var seq atomic.Int64
	deadline := time.Now().Add(f.inquiryDuration)
	t0 := time.Now()
	var wg sync.WaitGroup
	for range f.inquiryConns {
		wg.Go(func() {
			var mine []time.Duration
			mc := map[int]int{}
			for time.Now().Before(deadline) {
				s := time.Now()
				code, _, err := b.Do(ctx, "POST", u, auth, body(int(seq.Add(1))))
				if err != nil {
					mc[-1]++
					continue
				}
				mc[code]++
				if code == 201 {
					mine = append(mine, time.Since(s))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			for k, v := range mc {
				codes[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	el := time.Since(t0)
	s := benchkit.Summarize(lat)
	var other []string
	for k, v := range codes {
		if k != 201 {
			other = append(other, fmt.Sprintf("%d×%d", v, k))
		}
	}
	slices.Sort(other)
	fmt.Printf("POST /api/v1/inquiries through the ingress, %d connections for %s: %d created, %.1f/s, %s; other answers: %s; load average after %s\n",
		f.inquiryConns, f.inquiryDuration, len(lat), float64(len(lat))/el.Seconds(), s, orNone(strings.Join(other, ", ")), benchkit.LoadAvg())
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
