package service_test

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

// fixed renders an instant of the API with a fixed number of digits, so
// that strings compare as times.
func fixed(v any) string {
	t, err := time.Parse(time.RFC3339Nano, v.(string))
	if err != nil {
		panic(err)
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}

type row struct {
	id, status, property, checkIn, checkOut, createdAt, updatedAt string
}

func TestListQueries(t *testing.T) {
	t.Parallel()
	h := start(t)
	org := h.org(500)
	other := h.org(500)
	tok := h.token(org)

	// 30 bookings over two properties, every status, some sharing dates so
	// that the id breaks ties; one of another org.
	statuses := []string{"inquiry", "reserved", "confirmed", "cancelled"}
	var rows []row
	for i := range 30 {
		prop := "prop_a"
		if i%3 == 0 {
			prop = "prop_b"
		}
		status := statuses[i%4]
		createStatus := status
		if status == "cancelled" {
			createStatus = "inquiry"
		}
		in := fmt.Sprintf("2025-%02d-%02d", 1+i/10, 1+(i%5)*3)
		out := fmt.Sprintf("2025-%02d-%02d", 1+i/10, 3+(i%5)*3)
		if status == "reserved" || status == "confirmed" {
			// Held stays must not overlap: give each its own year.
			in, out = fmt.Sprintf("%d-01-01", 2030+i), fmt.Sprintf("%d-01-0%d", 2030+i, 2+i%7)
		}
		r := h.admin("POST", "/orgs/"+org+"/reservations", fmt.Sprintf(
			`{"propertyId":%q,"status":%q,"checkIn":%q,"checkOut":%q}`, prop, createStatus, in, out))
		if r.status != 201 {
			t.Fatalf("create %d: %d %s", i, r.status, r.raw)
		}
		res := obj(r.body["reservation"])
		if status == "cancelled" {
			r = h.admin("PATCH", "/orgs/"+org+"/reservations/"+res["id"].(string), `{"status":"cancelled"}`)
			res = obj(r.body["reservation"])
		}
		rows = append(rows, row{res["id"].(string), status, prop, in, out, fixed(res["createdAt"]), fixed(res["updatedAt"])})
	}
	if r := h.admin("POST", "/orgs/"+other+"/reservations", `{"propertyId":"prop_a","checkIn":"2025-01-01","checkOut":"2025-01-05"}`); r.status != 201 {
		t.Fatalf("other org: %d %s", r.status, r.raw)
	}

	list := func(query string) ([]string, float64) {
		t.Helper()
		r := h.public(tok, "GET", "/reservations?"+query, "")
		if r.status != 200 {
			t.Fatalf("%s: %d %s", query, r.status, r.raw)
		}
		var ids []string
		for _, x := range r.body["reservations"].([]any) {
			ids = append(ids, obj(x)["id"].(string))
		}
		return ids, r.body["total"].(float64)
	}
	expect := func(filter func(row) bool, key func(row) string, desc bool) []string {
		var sel []row
		for _, r := range rows {
			if filter(r) {
				sel = append(sel, r)
			}
		}
		sort.Slice(sel, func(i, j int) bool {
			a, b := key(sel[i])+"|"+sel[i].id, key(sel[j])+"|"+sel[j].id
			if desc {
				return a > b
			}
			return a < b
		})
		ids := make([]string, len(sel))
		for i, r := range sel {
			ids[i] = r.id
		}
		return ids
	}
	all := func(row) bool { return true }
	checkIn := func(r row) string { return r.checkIn }
	tests := []struct {
		query string
		want  []string
	}{
		{"limit=100", expect(all, checkIn, false)},
		{"limit=100&sort=checkIn&order=desc", expect(all, checkIn, true)},
		{"limit=100&sort=checkOut", expect(all, func(r row) string { return r.checkOut }, false)},
		{"limit=100&sort=createdAt&order=desc", expect(all, func(r row) string { return r.createdAt }, true)},
		{"limit=100&sort=updatedAt", expect(all, func(r row) string { return r.updatedAt }, false)},
		{"limit=100&status=cancelled", expect(func(r row) bool { return r.status == "cancelled" }, checkIn, false)},
		{"limit=100&status=reserved,confirmed", expect(func(r row) bool { return r.status == "reserved" || r.status == "confirmed" }, checkIn, false)},
		{"limit=100&propertyId=prop_b", expect(func(r row) bool { return r.property == "prop_b" }, checkIn, false)},
		{"limit=100&propertyId=prop_b&status=inquiry", expect(func(r row) bool { return r.property == "prop_b" && r.status == "inquiry" }, checkIn, false)},
		{"limit=100&checkInFrom=2025-02-01&checkInTo=2025-02-07", expect(func(r row) bool { return r.checkIn >= "2025-02-01" && r.checkIn <= "2025-02-07" }, checkIn, false)},
		{"limit=100&checkOutFrom=2025-03-03&checkOutTo=2025-03-09", expect(func(r row) bool { return r.checkOut >= "2025-03-03" && r.checkOut <= "2025-03-09" }, checkIn, false)},
		{"limit=100&checkInFrom=2031-01-01", expect(func(r row) bool { return r.checkIn >= "2031-01-01" }, checkIn, false)},
		{"limit=100&propertyId=nothing", nil},
	}
	for _, tt := range tests {
		got, total := list(tt.query)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") || int(total) != len(tt.want) {
			t.Errorf("%s:\n got %v (total %v)\nwant %v", tt.query, got, total, tt.want)
		}
	}

	// updatedSince is inclusive.
	mid := rows[15].updatedAt
	got, total := list("limit=100&sort=updatedAt&updatedSince=" + url.QueryEscape(mid))
	want := expect(func(r row) bool { return r.updatedAt >= mid }, func(r row) string { return r.updatedAt }, false)
	if strings.Join(got, ",") != strings.Join(want, ",") || int(total) != len(want) || got[0] != rows[15].id && want[0] != got[0] {
		t.Errorf("updatedSince %s:\n got %v\nwant %v", mid, got, want)
	}

	// Three pages of 12, 12 and 6 see every row exactly once, with the same
	// total on each.
	seen := map[string]int{}
	for page := range 3 {
		r := h.public(tok, "GET", fmt.Sprintf("/reservations?limit=12&skip=%d&sort=checkOut&order=desc", page*12), "")
		if r.status != 200 || r.body["total"] != 30.0 || r.body["limit"] != 12.0 || r.body["skip"] != float64(page*12) {
			t.Fatalf("page %d: %d total %v limit %v skip %v", page, r.status, r.body["total"], r.body["limit"], r.body["skip"])
		}
		items := r.body["reservations"].([]any)
		if wantN := []int{12, 12, 6}[page]; len(items) != wantN {
			t.Fatalf("page %d has %d rows, want %d", page, len(items), wantN)
		}
		for _, x := range items {
			seen[obj(x)["id"].(string)]++
		}
	}
	if len(seen) != 30 {
		t.Fatalf("paging saw %d distinct rows, want 30", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", id, n)
		}
	}
	if ids, total := list("skip=100"); len(ids) != 0 || total != 30 {
		t.Errorf("past the end: %v total %v", ids, total)
	}
	if ids, _ := list(""); len(ids) != 25 {
		t.Errorf("default page size %d, want 25", len(ids))
	}

	// Each bad parameter is named.
	for query, param := range map[string]string{
		"status=booked": "status", "checkInFrom=2025-1-1": "checkInFrom", "checkInTo=x": "checkInTo",
		"checkOutFrom=2025-02-30": "checkOutFrom", "checkOutTo=20250101": "checkOutTo",
		"updatedSince=" + url.QueryEscape(time.Now().Format("2006-01-02")): "updatedSince",
		"sort=price": "sort", "order=sideways": "order", "limit=0": "limit", "limit=101": "limit",
		"limit=abc": "limit", "skip=-1": "skip", "skip=1.5": "skip",
	} {
		r := h.public(tok, "GET", "/reservations?"+query, "")
		if r.status != 400 || r.body["error"] != "invalid_request" || !strings.Contains(r.body["message"].(string), param) {
			t.Errorf("%s: %d %s, want 400 naming %s", query, r.status, r.raw, param)
		}
	}
}
