package cli

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// session runs quartersctl commands against a fake API and writes a
// transcript of each: the command, its exit code, stdout, stderr and the
// requests it sent.
type session struct {
	t   *testing.T
	f   *fakeAPI
	dir string
	out strings.Builder
}

func newSession(t *testing.T) *session {
	f := newFakeAPI(t)
	s := &session{t: t, f: f, dir: t.TempDir()}
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(s.dir, "config"))
	t.Setenv("HOME", s.dir)
	t.Setenv("QUARTERS_CONFIG", "")
	t.Setenv("QUARTERS_URL", f.srv.URL)
	t.Setenv("QUARTERS_ADMIN_TOKEN", fakeAdminToken)
	t.Setenv("QUARTERS_ORG", "org_1")
	t.Setenv("QUARTERS_CLIENT_ID", fakeClientID)
	t.Setenv("QUARTERS_CLIENT_SECRET", fakeSecret)
	return s
}

// file writes a file into the session's directory and returns its path.
func (s *session) file(name, content string) string {
	p := filepath.Join(s.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
	return p
}

// run runs one command and returns its exit code.
func (s *session) run(args ...string) int {
	return s.runIn("", args...)
}

func (s *session) runIn(stdin string, args ...string) int {
	s.f.mu.Lock()
	s.f.requests = nil
	s.f.mu.Unlock()
	var stdout, stderr bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &stdout, &stderr)
	s.f.mu.Lock()
	reqs := append([]string(nil), s.f.requests...)
	s.f.mu.Unlock()
	fmt := func(x string) string {
		x = strings.ReplaceAll(x, s.f.srv.URL, "$URL")
		x = strings.ReplaceAll(x, s.dir, "$TMP")
		return x
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \"'") {
			quoted[i] = strconv.Quote(a)
		}
	}
	s.out.WriteString("$ quartersctl " + fmt(strings.Join(quoted, " ")) + "\n")
	s.out.WriteString("exit " + itoa(code) + "\n")
	if stdout.Len() > 0 {
		s.out.WriteString("--- stdout\n" + fmt(stdout.String()))
	}
	if stderr.Len() > 0 {
		s.out.WriteString("--- stderr\n" + fmt(stderr.String()))
	}
	if len(reqs) > 0 {
		s.out.WriteString("--- requests\n")
		for _, r := range reqs {
			s.out.WriteString(fmt(r) + "\n")
		}
	}
	s.out.WriteString("\n")
	return code
}

// golden compares the transcript with testdata/golden/NAME.golden.
func (s *session) golden(name string) {
	s.t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	got := s.out.String()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			s.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		s.t.Errorf("%s differs from the golden file (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func expect(t *testing.T, got, want int, what string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: exit %d, want %d", what, got, want)
	}
}

func TestOrgs(t *testing.T) {
	s := newSession(t)
	expect(t, s.run("orgs", "create", "--name", "Beta Homes", "--inquiry-daily-limit", "50"), ExitOK, "create")
	expect(t, s.run("orgs", "create", "--name", "Gamma", "--json"), ExitOK, "create --json")
	expect(t, s.run("orgs", "get"), ExitOK, "get from QUARTERS_ORG")
	expect(t, s.run("orgs", "get", "org_101", "--json"), ExitOK, "get by argument")
	expect(t, s.run("orgs", "update", "org_1", "--contract-provider", "external", "--inquiry-daily-limit", "10"), ExitOK, "update")
	expect(t, s.run("orgs", "update", "org_1"), ExitUsage, "update without changes")
	expect(t, s.run("orgs", "get", "org_missing"), ExitAPI4xx, "unknown org")
	expect(t, s.run("orgs", "get", "boom"), ExitAPI5xx, "server error")
	expect(t, s.run("orgs", "create", "--name", ""), ExitAPI4xx, "empty name")
	expect(t, s.run("orgs", "create"), ExitUsage, "missing --name")
	expect(t, s.run("orgs", "get", "--admin-token", "wrong"), ExitAPI4xx, "wrong token from the flag beats the environment")
	s.golden("orgs")
}

func TestCredentials(t *testing.T) {
	s := newSession(t)
	expect(t, s.run("credentials", "create", "--name", "website"), ExitOK, "create")
	expect(t, s.run("credentials", "create", "--json"), ExitOK, "create --json")
	expect(t, s.run("credentials", "revoke", "cl_101"), ExitOK, "revoke")
	expect(t, s.run("credentials", "list"), ExitOK, "list")
	expect(t, s.run("credentials", "revoke", "cl_nope"), ExitAPI4xx, "revoke unknown")
	expect(t, s.run("credentials", "revoke"), ExitUsage, "revoke without id")
	s.golden("credentials")
}

func TestProperties(t *testing.T) {
	s := newSession(t)
	yml := s.file("loft.yaml", "nickname: Loft Prenzlauer Berg\nslug: loft-pberg\ntimezone: Europe/Berlin\naddress:\n  city: Berlin\n  country: DE\n  postalCode: \"10405\"\naccommodates: 2\n")
	js := s.file("studio.json", `{"nickname":"Studio","timezone":"Europe/Berlin","address":{"city":"Berlin","country":"DE"}}`)
	expect(t, s.run("properties", "create", "-f", yml), ExitOK, "create from YAML")
	expect(t, s.run("properties", "create", "-f", js, "--publish"), ExitOK, "create from JSON and publish")
	expect(t, s.runIn(`{"nickname":"From stdin","timezone":"UTC","address":{"city":"Oslo","country":"NO"}}`, "properties", "replace", "prop_101", "-f", "-", "--json"), ExitOK, "replace from stdin")
	expect(t, s.run("properties", "get", "prop_101"), ExitOK, "get")
	expect(t, s.run("properties", "publish", "prop_101"), ExitOK, "publish")
	expect(t, s.run("properties", "unpublish", "prop_101", "--json"), ExitOK, "unpublish")
	expect(t, s.run("properties", "delete", "prop_101"), ExitOK, "delete")
	expect(t, s.run("properties", "get", "prop_101"), ExitAPI4xx, "get deleted")
	expect(t, s.run("properties", "create", "-f", filepath.Join(s.dir, "missing.yaml")), ExitUsage, "missing file")
	expect(t, s.run("properties", "create", "-f", s.file("bad.yaml", "timezone: UTC\n")), ExitAPI4xx, "draft refused")
	s.golden("properties")
}

func TestBlocks(t *testing.T) {
	s := newSession(t)
	expect(t, s.run("blocks", "add", "prop_1", "--start", "2027-03-01", "--end", "2027-03-15", "--reason", "renovation"), ExitOK, "add")
	expect(t, s.run("blocks", "list", "prop_1"), ExitOK, "list")
	expect(t, s.run("blocks", "list", "prop_1", "--json"), ExitOK, "list --json")
	expect(t, s.run("blocks", "delete", "prop_1", "blk_1"), ExitOK, "delete")
	expect(t, s.run("blocks", "add", "prop_1", "--start", "2027-03-01"), ExitUsage, "add without --end")
	s.golden("blocks")
}

func TestAdminReservations(t *testing.T) {
	s := newSession(t)
	expect(t, s.run("reservations", "create", "--property", "prop_1", "--check-in", "2027-09-01", "--check-out", "2027-12-01",
		"--status", "reserved", "--first-name", "Katherine", "--last-name", "Johnson", "--email", "kj@example.com", "--adults", "1"), ExitOK, "create from flags")
	f := s.file("booking.yaml", "propertyId: prop_1\ncheckIn: \"2028-01-01\"\ncheckOut: \"2028-02-01\"\nguest:\n  lastName: Noether\n  email: en@example.com\nnotes: from a file\n")
	expect(t, s.run("reservations", "create", "-f", f, "--status", "confirmed", "--json"), ExitOK, "create from a file with a flag")
	expect(t, s.run("reservations", "update", "res_101", "--status", "confirmed", "--invoice-paid"), ExitOK, "update")
	expect(t, s.run("reservations", "update", "res_101"), ExitUsage, "update without fields")
	expect(t, s.run("reservations", "delete", "res_101"), ExitOK, "delete")
	expect(t, s.run("reservations", "delete", "res_101"), ExitAPI4xx, "delete again")
	s.golden("admin-reservations")
}

func TestWebhooks(t *testing.T) {
	s := newSession(t)
	expect(t, s.run("webhooks", "add", "https://example.com/quarters"), ExitOK, "add")
	expect(t, s.run("webhooks", "list"), ExitOK, "list")
	expect(t, s.run("webhooks", "ping", "wh_1"), ExitOK, "ping")
	expect(t, s.run("webhooks", "deliveries", "wh_1", "--limit", "2"), ExitOK, "deliveries")
	expect(t, s.run("webhooks", "redeliver", "wh_1", "dlv_1", "--json"), ExitOK, "redeliver")
	expect(t, s.run("webhooks", "delete", "wh_1"), ExitOK, "delete")
	expect(t, s.run("webhooks", "ping", "wh_nope"), ExitAPI4xx, "ping unknown")
	s.golden("webhooks")
}

func TestAPICommands(t *testing.T) {
	s := newSession(t)
	expect(t, s.run("token"), ExitOK, "token")
	expect(t, s.run("listings"), ExitOK, "listings")
	expect(t, s.run("listings", "--json"), ExitOK, "listings --json")
	expect(t, s.run("listing", "prop_1"), ExitOK, "listing")
	expect(t, s.run("listing", "prop_9"), ExitAPI4xx, "unknown listing")
	expect(t, s.run("calendar", "prop_1", "--start", "2027-03-01", "--end", "2027-03-05"), ExitOK, "calendar")
	expect(t, s.run("reservation", "res_2"), ExitOK, "reservation")
	expect(t, s.run("reservation", "res_2", "--json"), ExitOK, "reservation --json")
	expect(t, s.run("inquiries", "create", "--property", "prop_1", "--last-name", "Hopper", "--email", "gh@example.com",
		"--check-in", "2027-10-01", "--check-out", "2027-12-01", "--adults", "2", "--send-confirmation=false"), ExitOK, "inquiry")
	expect(t, s.run("inquiries", "create", "--property", "prop_1", "--last-name", "Hopper"), ExitAPI4xx, "inquiry refused")
	expect(t, s.run("listings", "--client-secret", "wrong"), ExitAPI4xx, "wrong secret")
	expect(t, s.run("listings", "--url", "http://127.0.0.1:1"), ExitAPI5xx, "nothing listening")
	s.golden("api")
}

func TestReservationFilters(t *testing.T) {
	s := newSession(t)
	expect(t, s.run("reservations"), ExitOK, "default")
	expect(t, s.run("reservations", "--status", "reserved,confirmed", "--property", "prop_1", "--check-in-from", "2027-01-01",
		"--check-in-to", "2027-12-31", "--check-out-from", "2027-02-01", "--check-out-to", "2028-01-01",
		"--updated-since", "2026-11-20T10:00:00Z", "--sort", "checkOut", "--order", "desc", "--limit", "5", "--skip", "0"), ExitOK, "every filter")
	expect(t, s.run("reservations", "--limit", "1", "--skip", "1"), ExitOK, "one page")
	expect(t, s.run("reservations", "--all", "--limit", "1", "--json"), ExitOK, "all pages")
	expect(t, s.run("reservations", "--updated-since", "yesterday"), ExitUsage, "bad timestamp")
	s.golden("reservation-filters")
}

func TestSync(t *testing.T) {
	s := newSession(t)
	state := filepath.Join(s.dir, "sync.json")
	expect(t, s.run("sync", "--state", state, "--limit", "2"), ExitOK, "first run")
	expect(t, s.run("sync", "--state", state, "--limit", "2"), ExitOK, "nothing new")
	expect(t, s.run("reservations", "update", "res_2", "--status", "cancelled"), ExitOK, "change one")
	expect(t, s.run("reservations", "create", "--property", "prop_1", "--check-in", "2028-03-01", "--check-out", "2028-04-01", "--last-name", "Hamilton"), ExitOK, "create one")
	expect(t, s.run("sync", "--state", state, "--json"), ExitOK, "the two changes")
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	s.out.WriteString("--- " + filepath.Base(state) + "\n" + string(data))
	s.golden("sync")
}

func TestImportProperties(t *testing.T) {
	s := newSession(t)
	csv := s.file("props.csv", "key,nickname,timezone,address.city,address.country,address.postalCode:string,accommodates\n"+
		"loft,Loft Mitte,Europe/Berlin,Berlin,DE,10115,2\n"+
		"studio,Studio,Europe/Berlin,Berlin,DE,10999,1\n"+
		",,Europe/Berlin,Berlin,DE,,\n"+
		"loft,Loft again,Europe/Berlin,Berlin,DE,10115,3\n"+
		"nonick,,Europe/Berlin,Berlin,DE,,\n")
	expect(t, s.run("import", "properties", csv, "--concurrency", "1", "--publish"), ExitPartial, "first import")
	expect(t, s.run("import", "properties", csv, "--concurrency", "1", "--json"), ExitPartial, "second import replaces")
	if len(s.f.props) != 3 { // prop_1 and the two imported
		t.Errorf("%d properties after two imports, want 3", len(s.f.props))
	}
	dir := filepath.Dir(s.file("drafts/a.yaml", "nickname: A\ntimezone: UTC\naddress: {city: Oslo, country: NO}\n"))
	s.file("drafts/b.jsonl", `{"nickname":"B","timezone":"UTC","address":{"city":"Oslo","country":"NO"}}`+"\n"+`{"nickname":"C","timezone":"UTC","address":{"city":"Oslo","country":"NO"}}`+"\nnot json\n")
	s.file("drafts/old.csv.quartersctl-import.json", `{"orgs":{}}`) // the state of an earlier import of one file: not input
	expect(t, s.run("import", "properties", dir, "--concurrency", "1"), ExitPartial, "directory")
	delete(s.f.props, "prop_103") // A, deleted outside the import
	expect(t, s.run("import", "properties", dir, "--concurrency", "1"), ExitPartial, "directory again")
	led, err := os.ReadFile(filepath.Join(dir, ".quartersctl-import.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.out.WriteString("--- drafts/.quartersctl-import.json\n" + string(led))
	s.golden("import-properties")
}

func TestImportReservations(t *testing.T) {
	s := newSession(t)
	in := s.file("bookings.jsonl", `{"propertyId":"prop_1","checkIn":"2027-01-01","checkOut":"2027-04-01","guest":{"firstName":"ada","lastName":" LOVELACE "}}
{"propertyId":"prop_1","checkIn":"2027-09-01","checkOut":"2027-10-01","status":"reserved","guest":{"firstName":"Mary","lastName":"Somerville"}}
{"propertyId":"prop_1","checkIn":"2027-09-01","checkOut":"2027-10-01","guest":{"firstName":"Mary","lastName":"Somerville"}}
{"propertyId":"prop_1","checkIn":"2027-09-01","checkOut":"2027-10-01","guest":{"firstName":"Emmy","lastName":"Noether"}}
{"propertyId":"prop_x","checkIn":"2027-09-01","checkOut":"2027-10-01","guest":{"lastName":"Nobody"}}
{"checkIn":"2027-09-01"}
`)
	expect(t, s.run("import", "reservations", in, "--concurrency", "1"), ExitPartial, "first import")
	n := len(s.f.res)
	expect(t, s.run("import", "reservations", in, "--concurrency", "1", "--json"), ExitPartial, "second import")
	if len(s.f.res) != n {
		t.Errorf("the second import created %d reservations, want none", len(s.f.res)-n)
	}
	t.Setenv("QUARTERS_CLIENT_ID", "")
	expect(t, s.run("import", "reservations", in, "--concurrency", "1"), ExitPartial, "with a credential set of its own")
	s.golden("import-reservations")
}

func TestConfigPrecedence(t *testing.T) {
	s := newSession(t)
	cfg := s.file("quartersctl.yaml", "url: http://127.0.0.1:1\nadmin-token: from-file\norg: org_1\n")
	t.Setenv("QUARTERS_ADMIN_TOKEN", "")
	expect(t, s.run("--config", cfg, "orgs", "get", "--url", s.f.srv.URL), ExitAPI4xx, "file token, flag url")
	t.Setenv("QUARTERS_ADMIN_TOKEN", fakeAdminToken)
	expect(t, s.run("--config", cfg, "orgs", "get", "--url", s.f.srv.URL), ExitOK, "environment beats file")
	expect(t, s.run("--config", cfg, "orgs", "get"), ExitOK, "environment url beats file")
	t.Setenv("QUARTERS_URL", "")
	expect(t, s.run("--config", cfg, "orgs", "get"), ExitAPI5xx, "url from the file")
	t.Setenv("QUARTERS_CONFIG", cfg)
	expect(t, s.run("orgs", "get", "--url", s.f.srv.URL), ExitOK, "QUARTERS_CONFIG")
	// The default file under the user's config directory.
	s.file("config/quartersctl/config.yaml", "url: "+s.f.srv.URL+"\norg: org_1\n")
	t.Setenv("QUARTERS_CONFIG", "")
	expect(t, s.run("orgs", "get"), ExitOK, "default config file")
	expect(t, s.run("--config", filepath.Join(s.dir, "nope.yaml"), "orgs", "get"), ExitUsage, "missing config file")
	s.golden("config")
}

func TestHelp(t *testing.T) {
	s := newSession(t)
	expect(t, s.run("--help"), ExitOK, "help")
	expect(t, s.run("reservations", "--help"), ExitOK, "reservations help")
	expect(t, s.run("nonsense"), ExitUsage, "unknown command")
	expect(t, s.run("listings", "--bogus"), ExitUsage, "unknown flag")
	s.golden("help")
}

func TestCompletion(t *testing.T) {
	newSession(t)
	var out, errOut bytes.Buffer
	if code := Main([]string{"completion", "bash"}, nil, &out, &errOut); code != ExitOK || !strings.Contains(out.String(), "complete -o default -F __start_quartersctl quartersctl") {
		t.Errorf("completion bash: exit %d, %d bytes: %s", code, out.Len(), errOut.String())
	}
	out.Reset()
	// Completing a flag's values offers the API's sort keys.
	if code := Main([]string{"__complete", "reservations", "--sort", ""}, nil, &out, &errOut); code != ExitOK || !strings.Contains(out.String(), "updatedAt\n") {
		t.Errorf("completion of --sort: exit %d: %q", code, out.String())
	}
}

// TestEveryCommandHasHelpAndExamples walks the command tree.
func TestEveryCommandHasHelpAndExamples(t *testing.T) {
	root := (&app{v: viper.New(), http: &http.Client{}}).rootCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Name() != "help" && !strings.HasPrefix(c.CommandPath(), "quartersctl completion") {
			if c.Short == "" || c.Example == "" {
				t.Errorf("%q has no short help or no example", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestImportConcurrentRerun imports many rows several at a time, twice:
// the second run replaces and finds what the first created.
func TestImportConcurrentRerun(t *testing.T) {
	s := newSession(t)
	var props, bookings strings.Builder
	for i := range 30 {
		fmt.Fprintf(&props, `{"nickname":"Flat %d","timezone":"UTC","address":{"city":"Oslo","country":"NO"}}`+"\n", i)
		fmt.Fprintf(&bookings, `{"propertyId":"prop_1","checkIn":"2029-01-%02d","checkOut":"2029-02-01","guest":{"lastName":"Guest %d"}}`+"\n", i%28+1, i)
	}
	p := s.file("flats.jsonl", props.String())
	b := s.file("bookings.jsonl", bookings.String())
	var stdout, stderr bytes.Buffer
	for run := range 2 {
		stdout.Reset()
		if code := Main([]string{"import", "properties", p, "--concurrency", "8"}, nil, &stdout, &stderr); code != ExitOK {
			t.Fatalf("run %d: exit %d: %s", run, code, stderr.String())
		}
		want := []string{"properties: 30 created, 0 replaced", "properties: 0 created, 30 replaced"}[run]
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("run %d: %q, want %q", run, stdout.String(), want)
		}
		stdout.Reset()
		if code := Main([]string{"import", "reservations", b, "--concurrency", "8"}, nil, &stdout, &stderr); code != ExitOK {
			t.Fatalf("run %d: exit %d: %s", run, code, stderr.String())
		}
		want = []string{"reservations: 30 created, 0 already there", "reservations: 0 created, 30 already there"}[run]
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("run %d: %q, want %q", run, stdout.String(), want)
		}
	}
	if len(s.f.props) != 31 || len(s.f.res) != 33 {
		t.Errorf("%d properties and %d reservations, want 31 and 33", len(s.f.props), len(s.f.res))
	}
}
