package routes

import "testing"

func TestDefaultTableMatchesLongestRoute(t *testing.T) {
	t.Parallel()
	tbl, err := Default(true)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path    string
		service string
	}{
		{"/api/v1/oauth2/token", "auth"},
		{"/api/v1/listings", "catalog"},
		{"/api/v1/listings/abc", "catalog"},
		{"/api/v1/listings/abc/calendar", "availability"},
		{"/api/v1/listings/abc/other", "catalog"},
		{"/api/v1/reservations", "bookings"},
		{"/api/v1/reservations/r1", "bookings"},
		{"/api/v1/reservations/r1/agreement", "agreements"},
		{"/api/v1/reservations/r1/agreement/document", "agreements"},
		{"/api/v1/inquiries", "bookings"},
		{"/api/v1/nope", "auth"},
		{"/api/v1", "auth"},
		{"/admin/v1/orgs", "auth"},
		{"/admin/v1/orgs/o1/credentials/c1", "auth"},
		{"/admin/v1/orgs/o1/properties/p1/publish", "catalog"},
		{"/admin/v1/orgs/o1/properties/p1/blocks/b1", "availability"},
		{"/admin/v1/orgs/o1/reservations/r1", "bookings"},
		{"/admin/v1/orgs/o1/reservations/r1/request-contract", "agreements"},
		{"/admin/v1/orgs/o1/reservations/r1/agreements", "agreements"},
		{"/admin/v1/orgs/o1/inquiries/i1/convert", "bookings"},
		{"/admin/v1/orgs/o1/emails", "smtp-sink"},
		{"/admin/v1/orgs/o1/webhooks/w1/deliveries/d1/redeliver", "webhook-dispatcher"},
		{"/admin/v1/whatever", "auth"},
	}
	for _, c := range cases {
		r, ok := tbl.Match(c.path)
		if !ok || r.Service != c.service {
			t.Errorf("Match(%q) = %q, %v; want %q", c.path, r.Service, ok, c.service)
		}
	}
	for _, p := range []string{"/", "/api", "/api/v2/listings", "/apix/v1", "/readyz"} {
		if r, ok := tbl.Match(p); ok {
			t.Errorf("Match(%q) = %q; want no route", p, r.Service)
		}
	}
}

func TestProductionTableDropsDevOnlyRoutes(t *testing.T) {
	t.Parallel()
	tbl, err := Default(false)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := tbl.Match("/admin/v1/orgs/o1/emails"); r.Service != "auth" {
		t.Fatalf("emails route in production table: got %q, want the auth fallback", r.Service)
	}
	for _, s := range tbl.Services() {
		if s == "smtp-sink" {
			t.Fatal("smtp-sink listed as a production service")
		}
	}
}

func TestCompileRefusesBadRoutes(t *testing.T) {
	t.Parallel()
	for name, rs := range map[string][]Route{
		"relative":  {{Path: "api", Service: "a"}},
		"noservice": {{Path: "/a"}},
		"duplicate": {{Path: "/a/{id}", Service: "a"}, {Path: "/a/{id}/", Service: "b"}},
		"partial":   {{Path: "/a/x{id}", Service: "a"}},
	} {
		if _, err := Compile(rs); err == nil {
			t.Errorf("%s: Compile accepted %v", name, rs)
		}
	}
}

func TestRegexForIngressNginx(t *testing.T) {
	t.Parallel()
	r := Route{Path: "/api/v1/listings/{id}/calendar"}
	if got, want := r.Regex(), `^/api/v1/listings/[^/]+/calendar(/.*)?$`; got != want {
		t.Fatalf("Regex() = %s, want %s", got, want)
	}
}

func BenchmarkMatch(b *testing.B) {
	tbl, err := Default(true)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		tbl.Match("/api/v1/reservations/r1/agreement/document")
	}
}
