package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

type org struct {
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	ContractProvider  string    `json:"contractProvider"`
	InquiryDailyLimit int       `json:"inquiryDailyLimit"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
}

type credential struct {
	ClientID     string     `json:"clientId"`
	ClientSecret string     `json:"clientSecret"`
	Name         *string    `json:"name"`
	CreatedAt    time.Time  `json:"createdAt"`
	RevokedAt    *time.Time `json:"revokedAt"`
}

type block struct {
	ID         string    `json:"id"`
	PropertyID string    `json:"propertyId"`
	Start      string    `json:"start"`
	End        string    `json:"end"`
	Reason     *string   `json:"reason"`
	CreatedAt  time.Time `json:"createdAt"`
}

type webhook struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"createdAt"`
}

type delivery struct {
	ID          string     `json:"id"`
	Event       string     `json:"event"`
	CreatedAt   time.Time  `json:"createdAt"`
	AttemptedAt *time.Time `json:"attemptedAt"`
	DurationMs  *int       `json:"durationMs"`
	StatusCode  *int       `json:"statusCode"`
	Outcome     string     `json:"outcome"`
	Error       *string    `json:"error"`
	Reason      *string    `json:"reason"`
	Redelivery  bool       `json:"redelivery"`
}

// show prints raw JSON with --json, else decodes raw's field key into T
// and renders it with render.
func show[T any](a *app, raw json.RawMessage, key string, render func(T) error) error {
	if a.jsonOut() {
		return printJSON(a.out, raw)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	var v T
	if err := json.Unmarshal(env[key], &v); err != nil {
		return fmt.Errorf("decode %s: %w", key, err)
	}
	return render(v)
}

// done prints a one-line confirmation of a call without an answer body, or
// {"ok":true,...} with --json.
func (a *app) done(msg string, kv ...string) error {
	if a.jsonOut() {
		m := map[string]any{"ok": true}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return printJSON(a.out, m)
	}
	_, err := fmt.Fprintln(a.out, msg)
	return err
}

func (a *app) printOrg(o org) error {
	return fields(a.out, "id", o.ID, "name", o.Name, "contractProvider", o.ContractProvider,
		"inquiryDailyLimit", itoa(o.InquiryDailyLimit), "createdAt", ts(&o.CreatedAt), "updatedAt", ts(&o.UpdatedAt))
}

func (a *app) orgsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "orgs", Short: "Create, read and update organisations (admin API)"}

	create := &cobra.Command{
		Use:   "create",
		Short: "Create an organisation",
		Args:  cobra.NoArgs,
		Example: `  quartersctl orgs create --name "Acme Rentals"
  quartersctl orgs create --name "Acme Rentals" --contract-provider external --inquiry-daily-limit 100 --json`,
		RunE: func(c *cobra.Command, _ []string) error {
			ad, err := a.admin()
			if err != nil {
				return err
			}
			body := orgBody(c)
			raw, err := ad.post(c.Context(), "/orgs", body)
			if err != nil {
				return err
			}
			return show(a, raw, "org", a.printOrg)
		},
	}
	orgFlags(create)
	_ = create.MarkFlagRequired("name")

	get := &cobra.Command{
		Use:   "get [ORG_ID]",
		Short: "Show an organisation (default: --org)",
		Args:  cobra.MaximumNArgs(1),
		Example: `  quartersctl orgs get org_123
  QUARTERS_ORG=org_123 quartersctl orgs get --json`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, id, err := a.adminOrgArg(args)
			if err != nil {
				return err
			}
			raw, err := ad.get(c.Context(), orgPath(id))
			if err != nil {
				return err
			}
			return show(a, raw, "org", a.printOrg)
		},
	}

	update := &cobra.Command{
		Use:   "update [ORG_ID]",
		Short: "Change an organisation's name, contract provider or inquiry allowance",
		Args:  cobra.MaximumNArgs(1),
		Example: `  quartersctl orgs update org_123 --inquiry-daily-limit 1000
  quartersctl --org org_123 orgs update --contract-provider external`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, id, err := a.adminOrgArg(args)
			if err != nil {
				return err
			}
			body := orgBody(c)
			if len(body) == 0 {
				return fmt.Errorf("nothing to change: pass --name, --contract-provider or --inquiry-daily-limit")
			}
			raw, err := ad.do(c.Context(), http.MethodPatch, orgPath(id), body)
			if err != nil {
				return err
			}
			return show(a, raw, "org", a.printOrg)
		},
	}
	orgFlags(update)

	cmd.AddCommand(create, get, update)
	return cmd
}

func orgFlags(c *cobra.Command) {
	c.Flags().String("name", "", "organisation name")
	c.Flags().String("contract-provider", "", "quarters or external")
	c.Flags().Int("inquiry-daily-limit", 0, "inquiries accepted per 24 hours")
}

// orgBody holds the org flags that were given.
func orgBody(c *cobra.Command) map[string]any {
	body := map[string]any{}
	if c.Flags().Changed("name") {
		body["name"], _ = c.Flags().GetString("name")
	}
	if c.Flags().Changed("contract-provider") {
		body["contractProvider"], _ = c.Flags().GetString("contract-provider")
	}
	if c.Flags().Changed("inquiry-daily-limit") {
		body["inquiryDailyLimit"], _ = c.Flags().GetInt("inquiry-daily-limit")
	}
	return body
}

// adminOrgArg is the admin client and the org of an optional ORG_ID
// argument, else of --org.
func (a *app) adminOrgArg(args []string) (*adminClient, string, error) {
	ad, err := a.admin()
	if err != nil {
		return nil, "", err
	}
	if len(args) == 1 {
		return ad, args[0], nil
	}
	o, err := a.org()
	return ad, o, err
}

// adminOrg is the admin client and --org.
func (a *app) adminOrg() (*adminClient, string, error) { return a.adminOrgArg(nil) }

func (a *app) credentialsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "credentials", Aliases: []string{"creds"}, Short: "Create, list and revoke credential sets of an organisation (admin API)"}
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a credential set; its secret is shown only now",
		Args:  cobra.NoArgs,
		Example: `  quartersctl --org org_123 credentials create --name website
  quartersctl --org org_123 credentials create --json | jq -r .credential.clientSecret`,
		RunE: func(c *cobra.Command, _ []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			body := map[string]any{}
			if c.Flags().Changed("name") {
				body["name"], _ = c.Flags().GetString("name")
			}
			raw, err := ad.post(c.Context(), orgPath(o, "credentials"), body)
			if err != nil {
				return err
			}
			return show(a, raw, "credential", func(cr credential) error {
				return fields(a.out, "clientId", cr.ClientID, "clientSecret", cr.ClientSecret, "name", str(cr.Name), "createdAt", ts(&cr.CreatedAt))
			})
		},
	}
	create.Flags().String("name", "", "a name to tell the set apart")
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the credential sets (without secrets)",
		Args:    cobra.NoArgs,
		Example: `  quartersctl --org org_123 credentials list`,
		RunE: func(c *cobra.Command, _ []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			raw, err := ad.get(c.Context(), orgPath(o, "credentials"))
			if err != nil {
				return err
			}
			return show(a, raw, "credentials", func(cs []credential) error {
				rows := make([][]string, 0, len(cs))
				for _, cr := range cs {
					rows = append(rows, []string{cr.ClientID, str(cr.Name), ts(&cr.CreatedAt), ts(cr.RevokedAt)})
				}
				return table(a.out, []string{"CLIENT ID", "NAME", "CREATED", "REVOKED"}, rows)
			})
		},
	}
	revoke := &cobra.Command{
		Use:     "revoke CLIENT_ID",
		Short:   "Revoke a credential set: its tokens fail from the next call on",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 credentials revoke cl_abc`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			if err := ad.del(c.Context(), orgPath(o, "credentials", args[0])); err != nil {
				return err
			}
			return a.done("revoked "+args[0], "clientId", args[0])
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func (a *app) blocksCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "blocks", Short: "Add, list and delete calendar blocks of a property (admin API)"}
	printBlock := func(b block) error {
		return fields(a.out, "id", b.ID, "propertyId", b.PropertyID, "start", b.Start, "end", b.End, "reason", str(b.Reason), "createdAt", ts(&b.CreatedAt))
	}
	add := &cobra.Command{
		Use:     "add PROPERTY_ID",
		Short:   "Block days of a property's calendar (end exclusive)",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 blocks add prop_1 --start 2027-03-01 --end 2027-03-15 --reason renovation`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			start, _ := c.Flags().GetString("start")
			end, _ := c.Flags().GetString("end")
			body := map[string]any{"start": start, "end": end}
			if c.Flags().Changed("reason") {
				body["reason"], _ = c.Flags().GetString("reason")
			}
			raw, err := ad.post(c.Context(), orgPath(o, "properties", args[0], "blocks"), body)
			if err != nil {
				return err
			}
			return show(a, raw, "block", printBlock)
		},
	}
	add.Flags().String("start", "", "first blocked day, YYYY-MM-DD")
	add.Flags().String("end", "", "first day after the block, YYYY-MM-DD")
	add.Flags().String("reason", "", "why the days are blocked")
	_ = add.MarkFlagRequired("start")
	_ = add.MarkFlagRequired("end")
	list := &cobra.Command{
		Use:     "list PROPERTY_ID",
		Short:   "List a property's blocks",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 blocks list prop_1`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			raw, err := ad.get(c.Context(), orgPath(o, "properties", args[0], "blocks"))
			if err != nil {
				return err
			}
			return show(a, raw, "blocks", func(bs []block) error {
				rows := make([][]string, 0, len(bs))
				for _, b := range bs {
					rows = append(rows, []string{b.ID, b.Start, b.End, str(b.Reason), ts(&b.CreatedAt)})
				}
				return table(a.out, []string{"ID", "START", "END", "REASON", "CREATED"}, rows)
			})
		},
	}
	del := &cobra.Command{
		Use:     "delete PROPERTY_ID BLOCK_ID",
		Short:   "Delete a block",
		Args:    cobra.ExactArgs(2),
		Example: `  quartersctl --org org_123 blocks delete prop_1 blk_9`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			if err := ad.del(c.Context(), orgPath(o, "properties", args[0], "blocks", args[1])); err != nil {
				return err
			}
			return a.done("deleted block "+args[1], "blockId", args[1])
		},
	}
	cmd.AddCommand(add, list, del)
	return cmd
}

func (a *app) webhooksCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "webhooks", Short: "Register, list, ping and inspect webhook endpoints (admin API)"}
	add := &cobra.Command{
		Use:   "add URL",
		Short: "Register a webhook endpoint; prints its signing secret",
		Args:  cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 webhooks add https://example.com/quarters/hook
  quartersctl --org org_123 webhooks add http://127.0.0.1:9000/ --json   # http and loopback: dev stack only`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			raw, err := ad.post(c.Context(), orgPath(o, "webhooks"), map[string]any{"url": args[0]})
			if err != nil {
				return err
			}
			return show(a, raw, "webhook", func(w webhook) error {
				return fields(a.out, "id", w.ID, "url", w.URL, "secret", w.Secret, "createdAt", ts(&w.CreatedAt))
			})
		},
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the webhook endpoints with their secrets",
		Args:    cobra.NoArgs,
		Example: `  quartersctl --org org_123 webhooks list`,
		RunE: func(c *cobra.Command, _ []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			raw, err := ad.get(c.Context(), orgPath(o, "webhooks"))
			if err != nil {
				return err
			}
			return show(a, raw, "webhooks", func(ws []webhook) error {
				rows := make([][]string, 0, len(ws))
				for _, w := range ws {
					rows = append(rows, []string{w.ID, w.URL, w.Secret, ts(&w.CreatedAt)})
				}
				return table(a.out, []string{"ID", "URL", "SECRET", "CREATED"}, rows)
			})
		},
	}
	del := &cobra.Command{
		Use:     "delete WEBHOOK_ID",
		Short:   "Delete a webhook endpoint",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 webhooks delete wh_1`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			if err := ad.del(c.Context(), orgPath(o, "webhooks", args[0])); err != nil {
				return err
			}
			return a.done("deleted webhook "+args[0], "webhookId", args[0])
		},
	}
	ping := &cobra.Command{
		Use:     "ping WEBHOOK_ID",
		Short:   "Send a ping delivery to an endpoint",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 webhooks ping wh_1 && quartersctl --org org_123 webhooks deliveries wh_1 --limit 1`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			if _, err := ad.post(c.Context(), orgPath(o, "webhooks", args[0], "ping"), nil); err != nil {
				return err
			}
			return a.done("ping sent to webhook "+args[0], "webhookId", args[0])
		},
	}
	deliveries := &cobra.Command{
		Use:     "deliveries WEBHOOK_ID",
		Short:   "List an endpoint's last deliveries, newest first",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 webhooks deliveries wh_1 --limit 10`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			p := orgPath(o, "webhooks", args[0], "deliveries")
			if c.Flags().Changed("limit") {
				n, _ := c.Flags().GetInt("limit")
				p += "?limit=" + strconv.Itoa(n)
			}
			raw, err := ad.get(c.Context(), p)
			if err != nil {
				return err
			}
			return show(a, raw, "deliveries", func(ds []delivery) error {
				rows := make([][]string, 0, len(ds))
				for _, d := range ds {
					status, dur := "", ""
					if d.StatusCode != nil {
						status = itoa(*d.StatusCode)
					}
					if d.DurationMs != nil {
						dur = itoa(*d.DurationMs) + "ms"
					}
					outcome := d.Outcome
					if d.Redelivery {
						outcome += " (redelivery)"
					}
					why := str(d.Reason)
					if d.Error != nil {
						why = str(d.Error)
					}
					rows = append(rows, []string{d.ID, d.Event, ts(&d.CreatedAt), ts(d.AttemptedAt), status, dur, outcome, why})
				}
				return table(a.out, []string{"ID", "EVENT", "CREATED", "ATTEMPTED", "STATUS", "DURATION", "OUTCOME", "ERROR"}, rows)
			})
		},
	}
	deliveries.Flags().Int("limit", 50, "how many deliveries (1-100)")
	redeliver := &cobra.Command{
		Use:     "redeliver WEBHOOK_ID DELIVERY_ID",
		Short:   "Send a delivery again (same id and body)",
		Args:    cobra.ExactArgs(2),
		Example: `  quartersctl --org org_123 webhooks redeliver wh_1 dlv_42`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			if _, err := ad.post(c.Context(), orgPath(o, "webhooks", args[0], "deliveries", args[1], "redeliver"), nil); err != nil {
				return err
			}
			return a.done("redelivery of "+args[1]+" sent", "webhookId", args[0], "deliveryId", args[1])
		},
	}
	cmd.AddCommand(add, list, del, ping, deliveries, redeliver)
	return cmd
}
