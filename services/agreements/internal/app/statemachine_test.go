package app_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"quarters.dev/pkg/apperr"
	"quarters.dev/services/agreements/internal/app"
	"quarters.dev/services/agreements/internal/domain"
)

// memHistories is an in-memory app.Histories for the state machine table: it
// keeps one history per reservation and counts the events each change emits.
type memHistories struct {
	mu     sync.Mutex
	h      map[string]domain.History
	events []string
}

func (m *memHistories) Get(_ context.Context, id string) (domain.History, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.h[id]
	if !ok {
		return domain.History{ReservationID: id}, nil
	}
	return h.Clone(), nil
}

func (m *memHistories) Update(_ context.Context, id, orgID string, change func(*domain.History) (domain.Effect, error)) (domain.History, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.h[id]
	if !ok {
		h = domain.History{ReservationID: id}
	}
	h = h.Clone()
	eff, err := change(&h)
	if err != nil || eff.None() {
		return h, err
	}
	h.OrgID = orgID
	for _, i := range eff.Changed {
		h.Revision++
		m.events = append(m.events, fmt.Sprintf("updated v%d %s current=%v", h.Versions[i].Version, h.Versions[i].Status, h.IsCurrent(i)))
	}
	if eff.Requested != nil {
		h.Revision++
		m.events = append(m.events, "requested")
	}
	m.h[id] = h
	return h.Clone(), nil
}

type memOrgs map[string]domain.Provider

func (m memOrgs) Get(_ context.Context, id string) (app.Org, bool, error) {
	p, ok := m[id]
	return app.Org{ID: id, Provider: p}, ok, nil
}

type memReservations map[string]app.Reservation

func (m memReservations) Get(_ context.Context, id string) (app.Reservation, bool, error) {
	r, ok := m[id]
	return r, ok, nil
}

type noDocuments struct{}

func (noDocuments) Create(context.Context, app.FileMeta) (app.Upload, error) {
	return nil, fmt.Errorf("no document store in this test")
}
func (noDocuments) Open(context.Context, string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("no document store in this test")
}
func (noDocuments) Delete(context.Context, string) error { return nil }

func sp(s string) *string { return &s }

// report builds a report: status, externalId ("" for none) and signers as
// role=status pairs.
func report(status, ext string, signers ...domain.SignerReport) domain.Report {
	r := domain.Report{Status: domain.Status(status), Signers: signers}
	if ext != "" {
		r.ExternalID = sp(ext)
	}
	return r
}

func signer(role, status string) domain.SignerReport {
	s := domain.SignerReport{Role: role}
	if status != "" {
		s.Status = domain.Of(status)
	}
	return s
}

type fixture struct {
	svc  *app.Service
	hist *memHistories
	orgs memOrgs
	now  time.Time
}

const (
	orgExt   = "org_ext"
	orgQ     = "org_q"
	resExt   = "res_ext"
	resQ     = "res_q"
	resOther = "res_other"
)

func newFixture() *fixture {
	f := &fixture{
		hist: &memHistories{h: map[string]domain.History{}},
		orgs: memOrgs{orgExt: domain.ProviderExternal, orgQ: domain.ProviderQuarters},
		now:  time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC),
	}
	f.svc = &app.Service{
		Histories: f.hist,
		Orgs:      f.orgs,
		Reservations: memReservations{
			resExt:   {ID: resExt, OrgID: orgExt, PropertyID: "prop_1"},
			resQ:     {ID: resQ, OrgID: orgQ, PropertyID: "prop_2"},
			resOther: {ID: resOther, OrgID: "org_else", PropertyID: "prop_3"},
		},
		Documents: noDocuments{},
		Now:       func() time.Time { return f.now },
	}
	return f
}

// put reports against resExt as orgExt, one minute after the previous step.
func (f *fixture) put(t *testing.T, r domain.Report) (domain.Agreement, bool, error) {
	t.Helper()
	f.now = f.now.Add(time.Minute)
	return f.svc.Report(context.Background(), orgExt, resExt, r)
}

func (f *fixture) must(t *testing.T, r domain.Report) domain.Agreement {
	t.Helper()
	a, _, err := f.put(t, r)
	if err != nil {
		t.Fatalf("setup report %+v: %v", r, err)
	}
	return a
}

func (f *fixture) history(t *testing.T) *domain.History {
	t.Helper()
	h, _ := f.hist.Get(context.Background(), resExt)
	return &h
}

// TestStateMachine has one row per row of the spec's agreement status table
// and per numbered rule of PUT /reservations/{id}/agreement.
func TestStateMachine(t *testing.T) {
	t.Parallel()
	type result struct {
		a       domain.Agreement
		created bool
		err     error
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		act   func(t *testing.T, f *fixture) result
		// code is the expected error code, "" for success.
		code    apperr.Code
		created bool
		// events is how many events the action emits.
		events int
		check  func(t *testing.T, f *fixture, r result)
	}{
		{
			name:  "table: (none), first report creates version 1 with the reported status",
			setup: func(*testing.T, *fixture) {},
			act: func(t *testing.T, f *fixture) result {
				a, c, err := f.put(t, report("sent", "env-1", signer("lessee", "")))
				return result{a, c, err}
			},
			created: true, events: 1,
			check: func(t *testing.T, f *fixture, r result) {
				a := r.a
				if a.Version != 1 || a.Status != domain.StatusSent || a.Provider != domain.ProviderExternal ||
					*a.ExternalID != "env-1" || a.TemplateName != nil || a.SentAt == nil || !a.SentAt.Equal(f.now) {
					t.Fatalf("first version: %+v", a)
				}
				if len(a.Signers) != 1 || a.Signers[0].Status != domain.SignerPending {
					t.Fatalf("signers: %+v", a.Signers)
				}
			},
		},
		{
			name:  "table: live one, a different externalId creates a new version and supersedes it",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("sent", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				a, c, err := f.put(t, report("completed", "env-2"))
				return result{a, c, err}
			},
			created: true, events: 2,
			check: func(t *testing.T, f *fixture, r result) {
				h := f.history(t)
				if r.a.Version != 2 || r.a.Status != domain.StatusCompleted || len(h.Versions) != 2 ||
					h.Versions[0].Status != domain.StatusSuperseded || h.Current().ID != r.a.ID {
					t.Fatalf("history: %+v", h.Versions)
				}
				want := []string{"updated v1 superseded current=false", "updated v2 completed current=true"}
				if got := f.hist.events[len(f.hist.events)-2:]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("events %v, want %v", got, want)
				}
			},
		},
		{
			name:  "table: sent current, reporting sent with a new externalId supersedes the old one",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("sent", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				a, c, err := f.put(t, report("sent", "env-2"))
				return result{a, c, err}
			},
			created: true, events: 2,
			check: func(t *testing.T, f *fixture, r result) {
				h := f.history(t)
				if h.Versions[0].Status != domain.StatusSuperseded || r.a.Status != domain.StatusSent || r.a.Version != 2 {
					t.Fatalf("history: %+v", h.Versions)
				}
			},
		},
		{
			name:  "table: completed current, a new externalId leaves it completed in history",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("completed", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				a, c, err := f.put(t, report("sent", "env-2"))
				return result{a, c, err}
			},
			created: true, events: 1,
			check: func(t *testing.T, f *fixture, r result) {
				h := f.history(t)
				old := h.Versions[0]
				if old.Status != domain.StatusCompleted || old.UpdatedAt.Equal(f.now) || r.a.Version != 2 {
					t.Fatalf("completed version touched: %+v", old)
				}
			},
		},
		{
			name:  "table: current, the same externalId updates it in place with the reported status (200)",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("sent", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				a, c, err := f.put(t, report("completed", "env-1"))
				return result{a, c, err}
			},
			created: false, events: 1,
			check: func(t *testing.T, f *fixture, r result) {
				h := f.history(t)
				if len(h.Versions) != 1 || r.a.Version != 1 || r.a.Status != domain.StatusCompleted ||
					r.a.CompletedAt == nil || !r.a.CompletedAt.Equal(f.now) || r.a.SentAt.Equal(f.now) {
					t.Fatalf("in-place update: %+v", h.Versions)
				}
			},
		},
		{
			name: "table: any, the externalId of a superseded version updates that historical row only",
			setup: func(t *testing.T, f *fixture) {
				f.must(t, report("sent", "env-1"))
				f.must(t, report("sent", "env-2"))
			},
			act: func(t *testing.T, f *fixture) result {
				a, c, err := f.put(t, report("voided", "env-1", signer("lessee", "declined")))
				return result{a, c, err}
			},
			created: false, events: 1,
			check: func(t *testing.T, f *fixture, r result) {
				h := f.history(t)
				cur := h.Current()
				if len(h.Versions) != 2 || cur.Version != 2 || cur.Status != domain.StatusSent || !cur.UpdatedAt.Before(f.now) {
					t.Fatalf("current changed: %+v", cur)
				}
				if r.a.Version != 1 || r.a.Status != domain.StatusVoided || r.a.VoidedAt == nil || r.a.Signers[0].DeclinedAt == nil {
					t.Fatalf("historical row: %+v", r.a)
				}
				if got := f.hist.events[len(f.hist.events)-1]; got != "updated v1 voided current=false" {
					t.Fatalf("event %q", got)
				}
			},
		},
		{
			name: "table: a superseded envelope reported as sent stays superseded",
			setup: func(t *testing.T, f *fixture) {
				f.must(t, report("sent", "env-1"))
				f.must(t, report("sent", "env-2"))
			},
			act: func(t *testing.T, f *fixture) result {
				a, c, err := f.put(t, report("sent", "env-1", signer("lessor", "viewed")))
				return result{a, c, err}
			},
			events: 1,
			check: func(t *testing.T, f *fixture, r result) {
				if r.a.Status != domain.StatusSuperseded || r.a.Signers[0].ViewedAt == nil || f.history(t).Current().Version != 2 {
					t.Fatalf("historical row: %+v", r.a)
				}
			},
		},
	}
	for _, st := range []string{"declined", "voided", "failed"} {
		cases = append(cases, struct {
			name    string
			setup   func(t *testing.T, f *fixture)
			act     func(t *testing.T, f *fixture) result
			code    apperr.Code
			created bool
			events  int
			check   func(t *testing.T, f *fixture, r result)
		}{
			name:  "table: current, reporting " + st + " records it in place",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("sent", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				r := report(st, "env-1")
				r.Error = domain.Of("provider said no")
				a, c, err := f.put(t, r)
				return result{a, c, err}
			},
			events: 1,
			check: func(t *testing.T, f *fixture, r result) {
				if string(r.a.Status) != st || r.a.Version != 1 {
					t.Fatalf("status: %+v", r.a)
				}
				stamps := map[string]*time.Time{"declined": r.a.DeclinedAt, "voided": r.a.VoidedAt}
				if ts, ok := stamps[st]; ok && (ts == nil || !ts.Equal(f.now)) {
					t.Fatalf("%sAt not stamped: %+v", st, r.a)
				}
				if (st == "failed") != (r.a.Error != nil) {
					t.Fatalf("error kept only while failed: %+v", r.a.Error)
				}
			},
		})
	}
	rules := []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		act   func(t *testing.T, f *fixture) result
		code  apperr.Code
		check func(t *testing.T, f *fixture, r result)
	}{
		{
			name: "rule 1: externalId is required unless status is failed",
			act: func(t *testing.T, f *fixture) result {
				_, _, err := f.put(t, report("sent", ""))
				return result{err: err}
			},
			code: apperr.InvalidRequest,
		},
		{
			name: "rule 1: failed without externalId and nothing current creates a version",
			act: func(t *testing.T, f *fixture) result {
				r := report("failed", "")
				r.Error = domain.Of("template missing")
				a, c, err := f.put(t, r)
				return result{a, c, err}
			},
			check: func(t *testing.T, f *fixture, r result) {
				if !r.created || r.a.ExternalID != nil || r.a.Status != domain.StatusFailed || *r.a.Error != "template missing" {
					t.Fatalf("failed report: %+v", r)
				}
			},
		},
		{
			name: "rule 2: a status that cannot be reported is 400 naming status",
			act: func(t *testing.T, f *fixture) result {
				_, _, err := f.put(t, report("superseded", "env-1"))
				return result{err: err}
			},
			code: apperr.InvalidRequest,
			check: func(t *testing.T, f *fixture, r result) {
				if msg := apperr.As(r.err).Message; !contains(msg, "status") {
					t.Fatalf("message %q does not name status", msg)
				}
			},
		},
		{
			name: "rule 2: a missing status is 400",
			act: func(t *testing.T, f *fixture) result {
				_, _, err := f.put(t, report("", "env-1"))
				return result{err: err}
			},
			code: apperr.InvalidRequest,
		},
		{
			name: "rule 3: a role listed twice is 400",
			act: func(t *testing.T, f *fixture) result {
				_, _, err := f.put(t, report("sent", "env-1", signer("lessee", ""), signer("lessee", "completed")))
				return result{err: err}
			},
			code: apperr.InvalidRequest,
		},
		{
			name: "rule 3: a signer without role is 400",
			act: func(t *testing.T, f *fixture) result {
				_, _, err := f.put(t, report("sent", "env-1", signer("", "completed")))
				return result{err: err}
			},
			code: apperr.InvalidRequest,
		},
		{
			name: "rule 3: signers are matched by role and never removed",
			setup: func(t *testing.T, f *fixture) {
				lessee := signer("lessee", "")
				lessee.SigningURL = domain.Of("https://sign.example/lessee")
				lessee.Name = domain.Of("Ann")
				f.must(t, report("sent", "env-1", signer("lessor", ""), lessee))
			},
			act: func(t *testing.T, f *fixture) result {
				a, c, err := f.put(t, report("sent", "env-1", signer("lessee", "completed")))
				return result{a, c, err}
			},
			check: func(t *testing.T, f *fixture, r result) {
				s := r.a.Signers
				if len(s) != 2 || s[0].Role != "lessor" || s[0].Status != domain.SignerPending ||
					s[1].Status != domain.SignerCompleted || s[1].CompletedAt == nil || s[1].Name != "Ann" ||
					s[1].SigningURL == nil || *s[1].SigningURL != "https://sign.example/lessee" {
					t.Fatalf("signers: %+v", s)
				}
			},
		},
		{
			name:  "rule 4: the same externalId answers 200, a different one 201",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("sent", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				if _, created, err := f.put(t, report("sent", "env-1", signer("lessee", "viewed"))); err != nil || created {
					t.Fatalf("same externalId: created=%v %v", created, err)
				}
				a, c, err := f.put(t, report("sent", "env-2"))
				return result{a, c, err}
			},
			check: func(t *testing.T, f *fixture, r result) {
				if !r.created || r.a.Version != 2 {
					t.Fatalf("different externalId: %+v", r)
				}
			},
		},
		{
			name:  "reservation table: a repeated completed report on the current agreement changes nothing but is announced, so a reserved booking confirms",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("completed", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				before := len(f.hist.events)
				a, c, err := f.put(t, report("completed", "env-1"))
				if len(f.hist.events) != before+1 {
					t.Fatalf("repeat emitted %v, want one event", f.hist.events[before:])
				}
				return result{a, c, err}
			},
			check: func(t *testing.T, f *fixture, r result) {
				if r.created || r.a.Version != 1 || r.a.Status != domain.StatusCompleted || r.a.UpdatedAt.Equal(f.now) {
					t.Fatalf("repeat: %+v", r.a)
				}
				if got := f.hist.events[len(f.hist.events)-1]; got != "updated v1 completed current=true" {
					t.Fatalf("event %q", got)
				}
			},
		},
		{
			name:  "rule 4 (retry rule): a repeated identical report changes nothing and emits nothing",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("sent", "env-1", signer("lessee", "viewed"))) },
			act: func(t *testing.T, f *fixture) result {
				before := len(f.hist.events)
				a, c, err := f.put(t, report("sent", "env-1", signer("lessee", "viewed")))
				if len(f.hist.events) != before {
					t.Fatalf("repeat emitted %v", f.hist.events[before:])
				}
				return result{a, c, err}
			},
			check: func(t *testing.T, f *fixture, r result) {
				if r.created || r.a.Version != 1 || r.a.UpdatedAt.Equal(f.now) {
					t.Fatalf("repeat: %+v", r)
				}
			},
		},
		{
			name: "rule 6: an org whose provider is not external may not write (409)",
			act: func(t *testing.T, f *fixture) result {
				_, _, err := f.svc.Report(context.Background(), orgQ, resQ, report("sent", "env-1"))
				return result{err: err}
			},
			code: apperr.Conflict,
		},
		{
			name: "rule 6: an org no event has named yet may not write (409)",
			act: func(t *testing.T, f *fixture) result {
				delete(f.orgs, orgExt)
				_, _, err := f.put(t, report("sent", "env-1"))
				return result{err: err}
			},
			code: apperr.Conflict,
		},
		{
			name:  "rule 7: failed without externalId while a sent envelope is current is 409",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("sent", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				_, _, err := f.put(t, report("failed", ""))
				return result{err: err}
			},
			code: apperr.Conflict,
		},
		{
			name:  "rule 7: failed without externalId while a completed envelope is current is 409",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("completed", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				_, _, err := f.put(t, report("failed", ""))
				return result{err: err}
			},
			code: apperr.Conflict,
		},
		{
			name:  "rule 7: failed without externalId after a declined envelope issues a new version",
			setup: func(t *testing.T, f *fixture) { f.must(t, report("declined", "env-1")) },
			act: func(t *testing.T, f *fixture) result {
				a, c, err := f.put(t, report("failed", ""))
				return result{a, c, err}
			},
			check: func(t *testing.T, f *fixture, r result) {
				h := f.history(t)
				if !r.created || r.a.Version != 2 || h.Versions[0].Status != domain.StatusDeclined {
					t.Fatalf("history: %+v", h.Versions)
				}
			},
		},
		{
			name: "errors: an unknown or foreign reservation is 404",
			act: func(t *testing.T, f *fixture) result {
				if _, _, err := f.svc.Report(context.Background(), orgExt, "res_unknown", report("sent", "e")); !apperr.Is(err, apperr.NotFound) {
					t.Fatalf("unknown: %v", err)
				}
				_, _, err := f.svc.Report(context.Background(), orgExt, resOther, report("sent", "e"))
				return result{err: err}
			},
			code: apperr.NotFound,
		},
		{
			name: "error is kept only while failed; stamps are set when a status is entered",
			setup: func(t *testing.T, f *fixture) {
				r := report("failed", "env-1")
				r.Error = domain.Of("bounced")
				f.must(t, r)
				f.must(t, report("failed", "env-1"))
			},
			act: func(t *testing.T, f *fixture) result {
				if h := f.history(t); h.Current().Error == nil || *h.Current().Error != "bounced" {
					t.Fatalf("error lost while still failed: %+v", h.Current())
				}
				a, c, err := f.put(t, report("sent", "env-1"))
				return result{a, c, err}
			},
			check: func(t *testing.T, f *fixture, r result) {
				if r.a.Error != nil || r.a.SentAt == nil || !r.a.SentAt.Equal(f.now) {
					t.Fatalf("after leaving failed: %+v", r.a)
				}
			},
		},
	}
	for _, rc := range rules {
		setup := rc.setup
		if setup == nil {
			setup = func(*testing.T, *fixture) {}
		}
		cases = append(cases, struct {
			name    string
			setup   func(t *testing.T, f *fixture)
			act     func(t *testing.T, f *fixture) result
			code    apperr.Code
			created bool
			events  int
			check   func(t *testing.T, f *fixture, r result)
		}{name: rc.name, setup: setup, act: rc.act, code: rc.code, events: -1, created: false, check: rc.check})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture()
			if tc.setup != nil {
				tc.setup(t, f)
			}
			before := len(f.hist.events)
			r := tc.act(t, f)
			switch {
			case tc.code == "" && r.err != nil:
				t.Fatalf("unexpected error: %v", r.err)
			case tc.code != "" && !apperr.Is(r.err, tc.code):
				t.Fatalf("error %v, want %s", r.err, tc.code)
			}
			if tc.code == "" && tc.events >= 0 {
				if r.created != tc.created {
					t.Fatalf("created %v, want %v", r.created, tc.created)
				}
				if got := len(f.hist.events) - before; got != tc.events {
					t.Fatalf("%d events (%v), want %d", got, f.hist.events[before:], tc.events)
				}
			}
			if tc.code != "" && len(f.hist.events) != before {
				t.Fatalf("a refused report emitted %v", f.hist.events[before:])
			}
			if tc.check != nil {
				tc.check(t, f, r)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestIssueQuarters covers the admin-issued agreement: status sent, a new
// version superseding a live current one, refused for an external org.
func TestIssueQuarters(t *testing.T) {
	t.Parallel()
	f := newFixture()
	ctx := context.Background()
	signers := []domain.SignerInput{{Role: "lessor", Name: "Owner", Email: "o@example.com"}, {Role: "lessee", Name: "Guest", Email: "g@example.com"}}
	a, err := f.svc.Issue(ctx, orgQ, resQ, "standard-lease", signers)
	if err != nil {
		t.Fatal(err)
	}
	if a.Provider != domain.ProviderQuarters || a.Status != domain.StatusSent || a.Version != 1 || *a.TemplateName != "standard-lease" ||
		len(a.Signers) != 2 || a.Signers[0].SigningToken == "" || a.Signers[0].SigningURL != nil {
		t.Fatalf("issued: %+v", a)
	}
	b, err := f.svc.Issue(ctx, orgQ, resQ, "standard-lease-v2", signers)
	if err != nil || b.Version != 2 {
		t.Fatalf("re-issue: %+v %v", b, err)
	}
	h, _ := f.hist.Get(ctx, resQ)
	if h.Versions[0].Status != domain.StatusSuperseded {
		t.Fatalf("first not superseded: %+v", h.Versions[0])
	}
	if _, err := f.svc.Issue(ctx, orgExt, resExt, "standard-lease", signers); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("external org: %v", err)
	}
	if _, err := f.svc.Issue(ctx, orgQ, resQ, "", nil); !apperr.Is(err, apperr.InvalidRequest) {
		t.Fatalf("no template: %v", err)
	}
	if _, err := f.svc.Issue(ctx, "org_unknown", resQ, "t", nil); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("unknown org: %v", err)
	}
	if _, err := f.svc.RequestContract(ctx, orgQ, resQ); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("request on quarters org: %v", err)
	}
	req, err := f.svc.RequestContract(ctx, orgExt, resExt)
	if err != nil || req.PropertyID != "prop_1" || req.ReservationID != resExt {
		t.Fatalf("request: %+v %v", req, err)
	}
	// The report rules hold for a quarters agreement once the org moved to
	// an external provider: the sent quarters agreement is live and is
	// superseded by the first external report.
	f.orgs[orgQ] = domain.ProviderExternal
	if _, _, err := f.svc.Report(ctx, orgQ, resQ, report("failed", "")); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("failed without externalId over a sent quarters agreement: %v", err)
	}
	c, created, err := f.svc.Report(ctx, orgQ, resQ, report("sent", "env-9"))
	if err != nil || !created || c.Version != 3 {
		t.Fatalf("external report after quarters: %+v %v", c, err)
	}
}
