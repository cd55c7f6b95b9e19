package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"quarters.dev/pkg/client"
)

// resRow is what a reservation table shows.
type resRow struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	PropertyID string `json:"propertyId"`
	CheckIn    string `json:"checkIn"`
	CheckOut   string `json:"checkOut"`
	Nights     int    `json:"nights"`
	Guest      struct {
		Name string `json:"name"`
	} `json:"guest"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

var resHeaders = []string{"ID", "STATUS", "PROPERTY", "CHECK-IN", "CHECK-OUT", "NIGHTS", "GUEST", "UPDATED"}

func (r resRow) cells() []string {
	return []string{r.ID, r.Status, r.PropertyID, r.CheckIn, r.CheckOut, itoa(r.Nights), r.Guest.Name, ts(&r.UpdatedAt)}
}

func decodeRes(raw json.RawMessage) (resRow, error) {
	var r resRow
	err := json.Unmarshal(raw, &r)
	return r, err
}

func (a *app) printReservation(raw json.RawMessage) error {
	r, err := decodeRes(raw)
	if err != nil {
		return fmt.Errorf("decode reservation: %w", err)
	}
	return fields(a.out, "id", r.ID, "status", r.Status, "propertyId", r.PropertyID, "checkIn", r.CheckIn, "checkOut", r.CheckOut,
		"nights", itoa(r.Nights), "guest", r.Guest.Name, "createdAt", ts(&r.CreatedAt), "updatedAt", ts(&r.UpdatedAt))
}

func (a *app) tokenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "token",
		Short: "Exchange the credential set for an access token and print it",
		Args:  cobra.NoArgs,
		Example: `  TOKEN=$(quartersctl token)
  curl -H "Authorization: Bearer $TOKEN" $QUARTERS_URL/api/v1/listings`,
		RunE: func(c *cobra.Command, _ []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			t, err := api.FetchToken(c.Context())
			if err != nil {
				return err
			}
			if a.jsonOut() {
				return printJSON(a.out, t)
			}
			_, err = fmt.Fprintln(a.out, t.AccessToken)
			return err
		},
	}
}

func (a *app) listingsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "listings",
		Short: "List the organisation's published listings",
		Args:  cobra.NoArgs,
		Example: `  quartersctl listings
  quartersctl listings --json | jq -r '.listings[].id'`,
		RunE: func(c *cobra.Command, _ []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := api.Get(c.Context(), "/listings", &raw); err != nil {
				return err
			}
			return show(a, raw, "listings", func(ls []client.Listing) error {
				rows := make([][]string, 0, len(ls))
				for _, l := range ls {
					rows = append(rows, []string{l.ID, l.Nickname, l.Slug, l.Timezone, ts(&l.PublishedAt)})
				}
				return table(a.out, []string{"ID", "NICKNAME", "SLUG", "TIMEZONE", "PUBLISHED"}, rows)
			})
		},
	}
}

func (a *app) listingCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "listing LISTING_ID",
		Short:   "Show one published listing (--json: all of it)",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl listing prop_1 --json`,
		RunE: func(c *cobra.Command, args []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := api.Get(c.Context(), "/listings/"+url.PathEscape(args[0]), &raw); err != nil {
				return err
			}
			return show(a, raw, "listing", func(l struct {
				client.Listing
				Address struct {
					City    string `json:"city"`
					Country string `json:"country"`
				} `json:"address"`
				Accommodates *int `json:"accommodates"`
			}) error {
				acc := ""
				if l.Accommodates != nil {
					acc = itoa(*l.Accommodates)
				}
				return fields(a.out, "id", l.ID, "nickname", l.Nickname, "slug", l.Slug, "city", l.Address.City,
					"country", l.Address.Country, "accommodates", acc, "timezone", l.Timezone, "publishedAt", ts(&l.PublishedAt))
			})
		},
	}
}

func (a *app) calendarCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "calendar LISTING_ID",
		Short: "Show a published listing's calendar, day by day",
		Args:  cobra.ExactArgs(1),
		Example: `  quartersctl calendar prop_1 --start 2027-03-01 --end 2027-03-31
  quartersctl calendar prop_1 --json | jq '[.days[] | select(.status=="available")] | length'`,
		RunE: func(c *cobra.Command, args []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			q := url.Values{}
			for _, k := range []string{"start", "end"} {
				if v, _ := c.Flags().GetString(k); v != "" {
					q.Set(k, v)
				}
			}
			p := "/listings/" + url.PathEscape(args[0]) + "/calendar"
			if len(q) > 0 {
				p += "?" + q.Encode()
			}
			var raw json.RawMessage
			if err := api.Get(c.Context(), p, &raw); err != nil {
				return err
			}
			return show(a, raw, "days", func(ds []client.CalendarDay) error {
				rows := make([][]string, 0, len(ds))
				for _, d := range ds {
					base := "no"
					if d.IsBaseMinNights {
						base = "yes"
					}
					rows = append(rows, []string{d.Date, d.Status, itoa(d.MinNights), base})
				}
				return table(a.out, []string{"DATE", "STATUS", "MIN NIGHTS", "BASE MIN NIGHTS"}, rows)
			})
		},
	}
	cmd.Flags().String("start", "", "first day, YYYY-MM-DD (default: today in the listing's zone)")
	cmd.Flags().String("end", "", "last day, inclusive, YYYY-MM-DD (default: start plus 730 days)")
	return cmd
}

func (a *app) reservationsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reservations",
		Short: "List reservations with the API's filters; create, update and delete them with the admin API",
		Long: `Without a subcommand, lists reservations through the public API (GET /api/v1/reservations)
with every filter of the API. --all pages through every match (100 a page unless --limit).
The subcommands create, update and delete call the admin API.`,
		Args: cobra.NoArgs,
		Example: `  quartersctl reservations --status reserved,confirmed --check-in-from 2027-01-01 --sort checkIn
  quartersctl reservations --property prop_1 --all --json
  quartersctl reservations --updated-since 2026-11-01T00:00:00Z --sort updatedAt --order desc --limit 10`,
		RunE: a.listReservations,
	}
	f := cmd.Flags()
	f.StringSlice("status", nil, "statuses, comma-separated: inquiry, reserved, confirmed, cancelled")
	f.String("property", "", "one property id")
	f.String("check-in-from", "", "check-in on or after, YYYY-MM-DD")
	f.String("check-in-to", "", "check-in on or before, YYYY-MM-DD")
	f.String("check-out-from", "", "check-out on or after, YYYY-MM-DD")
	f.String("check-out-to", "", "check-out on or before, YYYY-MM-DD")
	f.String("updated-since", "", "changed at or after this instant, RFC 3339")
	f.String("sort", "", "checkIn (API default), checkOut, updatedAt or createdAt")
	f.String("order", "", "asc (API default) or desc")
	f.Int("limit", 0, "page size, 1-100 (API default 25; 100 with --all)")
	f.Int("skip", 0, "rows to skip")
	f.Bool("all", false, "fetch every page")
	_ = cmd.RegisterFlagCompletionFunc("sort", cobra.FixedCompletions([]string{"checkIn", "checkOut", "updatedAt", "createdAt"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("order", cobra.FixedCompletions([]string{"asc", "desc"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"inquiry", "reserved", "confirmed", "cancelled"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.AddCommand(a.reservationCreateCmd(), a.reservationUpdateCmd(), a.reservationDeleteCmd())
	return cmd
}

func (a *app) listReservations(c *cobra.Command, _ []string) error {
	api, err := a.api()
	if err != nil {
		return err
	}
	f := c.Flags()
	var q client.ReservationQuery
	q.Status, _ = f.GetStringSlice("status")
	q.PropertyID, _ = f.GetString("property")
	q.CheckInFrom, _ = f.GetString("check-in-from")
	q.CheckInTo, _ = f.GetString("check-in-to")
	q.CheckOutFrom, _ = f.GetString("check-out-from")
	q.CheckOutTo, _ = f.GetString("check-out-to")
	q.Sort, _ = f.GetString("sort")
	q.Order, _ = f.GetString("order")
	q.Limit, _ = f.GetInt("limit")
	q.Skip, _ = f.GetInt("skip")
	if s, _ := f.GetString("updated-since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("--updated-since: want RFC 3339, e.g. 2026-11-01T00:00:00Z: %w", err)
		}
		q.UpdatedSince = t
	}
	all, _ := f.GetBool("all")
	if all && q.Limit == 0 {
		q.Limit = 100
	}
	var rows []client.Reservation
	total := 0
	for {
		page, err := api.Reservations(c.Context(), q)
		if err != nil {
			return err
		}
		rows = append(rows, page.Reservations...)
		total = page.Total
		if !all || len(page.Reservations) == 0 || q.Skip+len(page.Reservations) >= page.Total {
			break
		}
		q.Skip += len(page.Reservations)
	}
	if a.jsonOut() {
		raws := make([]json.RawMessage, len(rows))
		for i, r := range rows {
			raws[i] = r.Raw
		}
		first, _ := f.GetInt("skip")
		return printJSON(a.out, map[string]any{"reservations": raws, "total": total, "skip": first, "count": len(raws)})
	}
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		row, err := decodeRes(r.Raw)
		if err != nil {
			return fmt.Errorf("decode reservation: %w", err)
		}
		out = append(out, row.cells())
	}
	if err := table(a.out, resHeaders, out); err != nil {
		return err
	}
	first, _ := f.GetInt("skip")
	fmt.Fprintf(a.errOut, "%d of %d reservations (skip %d)\n", len(rows), total, first)
	return nil
}

func (a *app) reservationCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "reservation RESERVATION_ID",
		Short:   "Show one reservation (--json: all of it)",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl reservation res_1 --json | jq .reservation.guest`,
		RunE: func(c *cobra.Command, args []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := api.Get(c.Context(), "/reservations/"+url.PathEscape(args[0]), &raw); err != nil {
				return err
			}
			if a.jsonOut() {
				return printJSON(a.out, raw)
			}
			return a.printReservation(mustField(raw, "reservation"))
		},
	}
}

// bodyFlags merges -f FILE with the flags given: flag name → body path.
func bodyFromFlags(c *cobra.Command, a *app, strs map[string][]string, ints map[string]string, bools map[string]string) (map[string]any, error) {
	body := map[string]any{}
	if path, _ := c.Flags().GetString("file"); path != "" {
		d, err := readDoc(path, a.stdin)
		if err != nil {
			return nil, err
		}
		body = d
	}
	set := func(keys []string, v any) {
		m := body
		for _, k := range keys[:len(keys)-1] {
			sub, ok := m[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[k] = sub
			}
			m = sub
		}
		m[keys[len(keys)-1]] = v
	}
	for flag, keys := range strs {
		if c.Flags().Changed(flag) {
			v, _ := c.Flags().GetString(flag)
			set(keys, v)
		}
	}
	for flag, key := range ints {
		if c.Flags().Changed(flag) {
			v, _ := c.Flags().GetInt(flag)
			set([]string{key}, v)
		}
	}
	for flag, key := range bools {
		if c.Flags().Changed(flag) {
			v, _ := c.Flags().GetBool(flag)
			set([]string{key}, v)
		}
	}
	return body, nil
}

func (a *app) reservationCreateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a reservation (admin API) from flags and/or a ReservationInput file",
		Args:  cobra.NoArgs,
		Example: `  quartersctl --org org_123 reservations create --property prop_1 --check-in 2027-01-01 --check-out 2027-04-01 \
      --status reserved --first-name Ada --last-name Lovelace --email ada@example.com
  quartersctl --org org_123 reservations create -f booking.yaml`,
		RunE: func(c *cobra.Command, _ []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			body, err := bodyFromFlags(c, a, map[string][]string{
				"property": {"propertyId"}, "status": {"status"}, "check-in": {"checkIn"}, "check-out": {"checkOut"},
				"first-name": {"guest", "firstName"}, "last-name": {"guest", "lastName"}, "email": {"guest", "email"},
				"phone": {"guest", "phone"}, "notes": {"notes"},
			}, map[string]string{"adults": "adults", "children": "children"}, nil)
			if err != nil {
				return err
			}
			raw, err := ad.post(c.Context(), orgPath(o, "reservations"), body)
			if err != nil {
				return err
			}
			if a.jsonOut() {
				return printJSON(a.out, raw)
			}
			return a.printReservation(mustField(raw, "reservation"))
		},
	}
	f := cmd.Flags()
	f.StringP("file", "f", "", "ReservationInput as JSON (.json) or YAML; flags override its fields")
	for _, n := range []string{"property", "status", "check-in", "check-out", "first-name", "last-name", "email", "phone", "notes"} {
		f.String(n, "", "reservation "+n)
	}
	f.Int("adults", 0, "adults")
	f.Int("children", 0, "children")
	return cmd
}

func (a *app) reservationUpdateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "update RESERVATION_ID",
		Short: "Change a reservation (admin API): status, dates, notes, invoicePaid, or any field from a file",
		Args:  cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 reservations update res_1 --status confirmed
  quartersctl --org org_123 reservations update res_1 --invoice-paid --notes "paid by transfer"`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			body, err := bodyFromFlags(c, a, map[string][]string{
				"status": {"status"}, "check-in": {"checkIn"}, "check-out": {"checkOut"}, "notes": {"notes"},
			}, nil, map[string]string{"invoice-paid": "invoicePaid"})
			if err != nil {
				return err
			}
			if len(body) == 0 {
				return fmt.Errorf("nothing to change: pass -f or a field flag")
			}
			raw, err := ad.do(c.Context(), http.MethodPatch, orgPath(o, "reservations", args[0]), body)
			if err != nil {
				return err
			}
			if a.jsonOut() {
				return printJSON(a.out, raw)
			}
			return a.printReservation(mustField(raw, "reservation"))
		},
	}
	f := cmd.Flags()
	f.StringP("file", "f", "", "fields to change as JSON (.json) or YAML; flags override")
	for _, n := range []string{"status", "check-in", "check-out", "notes"} {
		f.String(n, "", "new "+n)
	}
	f.Bool("invoice-paid", false, "mark the invoice paid (--invoice-paid=false to unmark)")
	return cmd
}

func (a *app) reservationDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "delete RESERVATION_ID",
		Short:   "Delete a reservation (admin API); it vanishes from the public API",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 reservations delete res_1`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			if err := ad.del(c.Context(), orgPath(o, "reservations", args[0])); err != nil {
				return err
			}
			return a.done("deleted "+args[0], "reservationId", args[0])
		},
	}
}

func (a *app) inquiriesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "inquiries", Short: "Send inquiries through the public API"}
	create := &cobra.Command{
		Use:   "create",
		Short: "Send an inquiry for a published listing (POST /api/v1/inquiries)",
		Args:  cobra.NoArgs,
		Example: `  quartersctl inquiries create --property prop_1 --last-name Lovelace --email ada@example.com \
      --check-in 2027-01-01 --check-out 2027-04-01 --message "Is parking included?"
  quartersctl inquiries create -f inquiry.json`,
		RunE: func(c *cobra.Command, _ []string) error {
			api, err := a.api()
			if err != nil {
				return err
			}
			body, err := bodyFromFlags(c, a, map[string][]string{
				"property": {"propertyId"}, "first-name": {"firstName"}, "last-name": {"lastName"}, "email": {"email"},
				"phone": {"phone"}, "check-in": {"checkIn"}, "check-out": {"checkOut"}, "message": {"message"},
				"locale": {"locale"}, "source": {"source"},
			}, map[string]string{"adults": "adults", "children": "children", "infants": "infants"},
				map[string]string{"pets": "pets", "send-confirmation": "sendConfirmation"})
			if err != nil {
				return err
			}
			id, err := api.CreateInquiry(c.Context(), body)
			if err != nil {
				return err
			}
			if a.jsonOut() {
				return printJSON(a.out, map[string]string{"id": id})
			}
			_, err = fmt.Fprintln(a.out, id)
			return err
		},
	}
	f := create.Flags()
	f.StringP("file", "f", "", "InquiryInput as JSON (.json) or YAML; flags override its fields")
	for _, n := range []string{"property", "first-name", "last-name", "email", "phone", "check-in", "check-out", "message", "locale", "source"} {
		f.String(n, "", "inquiry "+n)
	}
	for _, n := range []string{"adults", "children", "infants"} {
		f.Int(n, 0, n)
	}
	f.Bool("pets", false, "bringing pets")
	f.Bool("send-confirmation", true, "--send-confirmation=false suppresses the guest's confirmation email")
	cmd.AddCommand(create)
	return cmd
}
