package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"quarters.dev/pkg/client"
)

// result is the outcome of one imported record.
type result struct {
	Source string `json:"source"`
	Key    string `json:"key,omitempty"`
	Action string `json:"action"` // created, replaced, exists, duplicate, failed
	ID     string `json:"id,omitempty"`
	Error  string `json:"error,omitempty"`
}

const importLong = `Imports many records at once through the admin API, a few at a time (--concurrency),
with a progress bar on a terminal (plain progress lines otherwise) and a summary of what
failed and why. Re-running the same input creates no duplicates.

Input: a directory (every .json, .yaml, .yml, .jsonl and .csv file in it, by name), a .csv
file (a header row; dotted columns such as address.city or guest.lastName set nested fields;
a cell that reads as a JSON number, boolean, array or object is one, else a string, and a
column named like "address.postalCode:string" always holds strings), a .jsonl file (one object
a line) or a .json/.yaml file (one object or an array).

properties: each record is a PropertyDraft plus an optional "key" (default: its nickname),
which identifies it across runs. The ids created are kept per organisation in a state file
(--state; default <input>.quartersctl-import.json, or .quartersctl-import.json inside a
directory). A key found there is replaced (PUT) instead of created; a key whose property was
deleted meanwhile is created anew. --publish publishes each property after saving it.

reservations: each record is a ReservationInput. Its natural key is propertyId, checkIn,
checkOut and the guest's first and last name (case and spacing ignored). Before creating, the
public API is searched for a reservation with that key in any status (GET /api/v1/reservations
filtered by property and check-in day); one found is reported as "exists" and left alone. The
search uses --client-id/--client-secret when set, else a credential set created for the run
and revoked at its end. Rows with the same key within the input are imported once.`

func (a *app) importCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import properties|reservations PATH",
		Short: "Bulk-import properties or reservations from a directory, CSV, JSONL, JSON or YAML",
		Long:  importLong,
		Args:  cobra.ExactArgs(2),
		Example: `  quartersctl --org org_123 import properties ./properties/ --publish
  quartersctl --org org_123 import properties listings.csv --concurrency 8
  quartersctl --org org_123 import reservations bookings.jsonl --json > report.json`,
		ValidArgs: []string{"properties", "reservations"},
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			workers, _ := c.Flags().GetInt("concurrency")
			if workers < 1 {
				return fmt.Errorf("--concurrency must be at least 1")
			}
			recs, err := readRecords(args[1])
			if err != nil {
				return err
			}
			var imp importer
			switch args[0] {
			case "properties":
				state, _ := c.Flags().GetString("state")
				if state == "" {
					state = defaultLedgerPath(args[1])
				}
				publish, _ := c.Flags().GetBool("publish")
				pi, err := newPropertyImporter(ad, o, state, publish)
				if err != nil {
					return err
				}
				imp = pi
			case "reservations":
				ri, cleanup, err := a.newReservationImporter(c.Context(), ad, o)
				if err != nil {
					return err
				}
				defer cleanup()
				imp = ri
			default:
				return fmt.Errorf("import %q: want properties or reservations", args[0])
			}
			results := a.runImport(c.Context(), args[0], imp, recs, workers)
			return a.importSummary(args[0], results)
		},
	}
	cmd.Flags().Int("concurrency", 4, "records imported at the same time")
	cmd.Flags().String("state", "", "properties: the state file of keys and ids (see above)")
	cmd.Flags().Bool("publish", false, "properties: publish each property after saving it")
	return cmd
}

// importer imports records: key runs first on every record, in input order,
// to find duplicates within the input; importOne then runs concurrently.
type importer interface {
	key(r record) (string, error)
	importOne(ctx context.Context, r record, key string) result
}

func (a *app) runImport(ctx context.Context, kind string, imp importer, recs []record, workers int) []result {
	results := make([]result, len(recs))
	var todo []int
	first := map[string]string{}
	for i, r := range recs {
		results[i] = result{Source: r.src}
		if r.err != nil {
			results[i].Action, results[i].Error = "failed", r.err.Error()
			continue
		}
		k, err := imp.key(r)
		if err != nil {
			results[i].Action, results[i].Error = "failed", err.Error()
			continue
		}
		results[i].Key = k
		if src, dup := first[k]; dup {
			results[i].Action, results[i].Error = "duplicate", "same key as "+src
			continue
		}
		first[k] = r.src
		todo = append(todo, i)
	}

	prog := newProgress(a.errOut, kind, len(todo))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := range jobs {
				res := imp.importOne(ctx, recs[i], results[i].Key)
				res.Source, res.Key = recs[i].src, results[i].Key
				results[i] = res
				prog.done(res)
			}
		})
	}
	for _, i := range todo {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	prog.finish()
	return results
}

// progress reports an import's advance on stderr: a bar on a terminal,
// a line a record otherwise.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int
	n     int
}

func newProgress(w io.Writer, kind string, total int) *progress {
	p := &progress{w: w, total: total}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("importing "+kind),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *progress) done(r result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.bar != nil {
		_ = p.bar.Add(1)
		return
	}
	detail := r.ID
	if r.Error != "" {
		detail = r.Error
	}
	fmt.Fprintf(p.w, "[%d/%d] %s: %s %s\n", p.n, p.total, r.Source, r.Action, detail)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

func (a *app) importSummary(kind string, results []result) error {
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Action]++
	}
	if a.jsonOut() {
		if err := printJSON(a.out, map[string]any{"kind": kind, "counts": counts, "results": results}); err != nil {
			return err
		}
	} else {
		var rows [][]string
		for _, r := range results {
			if r.Action == "failed" || r.Action == "duplicate" {
				rows = append(rows, []string{r.Source, r.Key, r.Action, r.Error})
			}
		}
		if len(rows) > 0 {
			if err := table(a.out, []string{"SOURCE", "KEY", "RESULT", "WHY"}, rows); err != nil {
				return err
			}
		}
		if kind == "properties" {
			fmt.Fprintf(a.out, "properties: %d created, %d replaced, %d duplicates in input, %d failed\n",
				counts["created"], counts["replaced"], counts["duplicate"], counts["failed"])
		} else {
			fmt.Fprintf(a.out, "reservations: %d created, %d already there, %d duplicates in input, %d failed\n",
				counts["created"], counts["exists"], counts["duplicate"], counts["failed"])
		}
	}
	if counts["failed"] > 0 {
		return &partialError{failed: counts["failed"]}
	}
	return nil
}

func failed(err error) result { return result{Action: "failed", Error: err.Error()} }

// ---- properties ----

// ledger maps each org's property keys to the ids created for them.
type ledger struct {
	Orgs map[string]map[string]string `json:"orgs"`
}

// ledgerSuffix ends the name of an import's state file.
const ledgerSuffix = ".quartersctl-import.json"

func defaultLedgerPath(input string) string {
	if info, err := os.Stat(input); err == nil && info.IsDir() {
		return filepath.Join(input, ledgerSuffix)
	}
	return input + ledgerSuffix
}

type propertyImporter struct {
	ad      *adminClient
	org     string
	path    string
	publish bool

	mu  sync.Mutex
	led ledger
}

func newPropertyImporter(ad *adminClient, org, path string, publish bool) (*propertyImporter, error) {
	p := &propertyImporter{ad: ad, org: org, path: path, publish: publish, led: ledger{Orgs: map[string]map[string]string{}}}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err == nil {
		if err := json.Unmarshal(data, &p.led); err != nil {
			return nil, fmt.Errorf("state file %s: %w", path, err)
		}
		if p.led.Orgs == nil {
			p.led.Orgs = map[string]map[string]string{}
		}
	}
	return p, nil
}

func (p *propertyImporter) key(r record) (string, error) {
	if k, ok := r.body["key"]; ok {
		s, ok := k.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("key must be a non-empty string")
		}
		return strings.TrimSpace(s), nil
	}
	if n, ok := r.body["nickname"].(string); ok && strings.TrimSpace(n) != "" {
		return strings.TrimSpace(n), nil
	}
	return "", fmt.Errorf("no key and no nickname")
}

func (p *propertyImporter) lookup(key string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.led.Orgs[p.org][key]
}

func (p *propertyImporter) remember(key, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.led.Orgs[p.org] == nil {
		p.led.Orgs[p.org] = map[string]string{}
	}
	p.led.Orgs[p.org][key] = id
	data, err := json.MarshalIndent(p.led, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(p.path, append(data, '\n'))
}

func (p *propertyImporter) importOne(ctx context.Context, r record, key string) result {
	draft := make(map[string]any, len(r.body))
	for k, v := range r.body {
		if k != "key" {
			draft[k] = v
		}
	}
	action := "created"
	var raw json.RawMessage
	var err error
	if id := p.lookup(key); id != "" {
		action = "replaced"
		raw, err = p.ad.do(ctx, http.MethodPut, orgPath(p.org, "properties", id), draft)
		var ae *client.Error
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			action = "created"
			raw, err = nil, nil
		}
	}
	if raw == nil && err == nil {
		raw, err = p.ad.post(ctx, orgPath(p.org, "properties"), draft)
	}
	if err != nil {
		return failed(err)
	}
	var env struct {
		Property property `json:"property"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Property.ID == "" {
		return failed(fmt.Errorf("answer without a property id"))
	}
	res := result{Action: action, ID: env.Property.ID}
	if err := p.remember(key, env.Property.ID); err != nil {
		return failed(fmt.Errorf("property %s saved, state file not written: %w", env.Property.ID, err))
	}
	if p.publish {
		if _, err := p.ad.post(ctx, orgPath(p.org, "properties", env.Property.ID, "publish"), nil); err != nil {
			r := failed(fmt.Errorf("saved, publish failed: %w", err))
			r.ID = env.Property.ID
			return r
		}
	}
	return res
}

// ---- reservations ----

type reservationImporter struct {
	ad  *adminClient
	org string
	api *client.Client
}

func (a *app) newReservationImporter(ctx context.Context, ad *adminClient, org string) (*reservationImporter, func(), error) {
	ri := &reservationImporter{ad: ad, org: org}
	if a.v.GetString("client-id") != "" {
		api, err := a.api()
		if err != nil {
			return nil, nil, err
		}
		ri.api = api
		return ri, func() {}, nil
	}
	raw, err := ad.post(ctx, orgPath(org, "credentials"), map[string]any{"name": "quartersctl import"})
	if err != nil {
		return nil, nil, fmt.Errorf("create a credential set to look up existing reservations: %w", err)
	}
	var env struct {
		Credential credential `json:"credential"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, nil, err
	}
	ri.api = client.New(a.baseURL()+"/api/v1", env.Credential.ClientID, env.Credential.ClientSecret)
	cleanup := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := ad.del(ctx, orgPath(org, "credentials", env.Credential.ClientID)); err != nil {
			fmt.Fprintf(a.errOut, "warning: revoke the import's credential set %s: %v\n", env.Credential.ClientID, err)
		}
	}
	return ri, cleanup, nil
}

// guestName is the normalised "first last" of a guest object.
func guestName(g any) string {
	m, _ := g.(map[string]any)
	first, _ := m["firstName"].(string)
	last, _ := m["lastName"].(string)
	return strings.ToLower(strings.Join(strings.Fields(first+" "+last), " "))
}

func (ri *reservationImporter) key(r record) (string, error) {
	var missing []string
	parts := make([]string, 0, 4)
	for _, f := range []string{"propertyId", "checkIn", "checkOut"} {
		s, _ := r.body[f].(string)
		if s == "" {
			missing = append(missing, f)
		}
		parts = append(parts, s)
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return strings.Join(append(parts, guestName(r.body["guest"])), "|"), nil
}

func (ri *reservationImporter) importOne(ctx context.Context, r record, key string) result {
	prop, checkIn, checkOut := r.body["propertyId"].(string), r.body["checkIn"].(string), r.body["checkOut"].(string)
	name := guestName(r.body["guest"])
	q := client.ReservationQuery{PropertyID: prop, CheckInFrom: checkIn, CheckInTo: checkIn, Limit: 100}
	for {
		page, err := ri.api.Reservations(ctx, q)
		if err != nil {
			return failed(fmt.Errorf("look up existing: %w", err))
		}
		for _, ex := range page.Reservations {
			var g struct {
				Guest map[string]any `json:"guest"`
			}
			_ = json.Unmarshal(ex.Raw, &g)
			if ex.CheckOut == checkOut && guestName(g.Guest) == name {
				return result{Action: "exists", ID: ex.ID}
			}
		}
		if len(page.Reservations) == 0 || q.Skip+len(page.Reservations) >= page.Total {
			break
		}
		q.Skip += len(page.Reservations)
	}
	raw, err := ri.ad.post(ctx, orgPath(ri.org, "reservations"), r.body)
	if err != nil {
		return failed(err)
	}
	var env struct {
		Reservation struct {
			ID string `json:"id"`
		} `json:"reservation"`
	}
	_ = json.Unmarshal(raw, &env)
	return result{Action: "created", ID: env.Reservation.ID}
}
