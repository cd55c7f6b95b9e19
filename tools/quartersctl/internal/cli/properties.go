package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

type property struct {
	ID          string         `json:"id"`
	Draft       map[string]any `json:"draft"`
	PublishedAt *time.Time     `json:"publishedAt"`
	Published   bool           `json:"published"`
	CreatedAt   time.Time      `json:"createdAt"`
	UpdatedAt   time.Time      `json:"updatedAt"`
}

type listingSnapshot struct {
	ID          string     `json:"id"`
	Nickname    string     `json:"nickname"`
	Slug        *string    `json:"slug"`
	PublishedAt *time.Time `json:"publishedAt"`
}

// readDoc reads one JSON or YAML object from path ("-" is stdin).
func readDoc(path string, stdin io.Reader) (map[string]any, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	return parseDoc(path, data)
}

// parseDoc decodes a JSON object, or a YAML one when the name does not end
// in .json.
func parseDoc(name string, data []byte) (map[string]any, error) {
	var m map[string]any
	if strings.EqualFold(filepath.Ext(name), ".json") {
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	} else if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%s: not an object", name)
	}
	return m, nil
}

func (a *app) printProperty(p property) error {
	nick, _ := p.Draft["nickname"].(string)
	return fields(a.out, "id", p.ID, "nickname", nick, "published", fmt.Sprint(p.Published),
		"publishedAt", ts(p.PublishedAt), "createdAt", ts(&p.CreatedAt), "updatedAt", ts(&p.UpdatedAt))
}

func (a *app) printListing(l listingSnapshot) error {
	return fields(a.out, "listing", l.ID, "nickname", l.Nickname, "slug", str(l.Slug), "publishedAt", ts(l.PublishedAt))
}

func (a *app) propertiesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "properties", Aliases: []string{"property", "props"}, Short: "Create, replace, read, publish and delete properties (admin API)"}
	create := &cobra.Command{
		Use:   "create -f FILE",
		Short: "Create a property from a PropertyDraft in a JSON or YAML file",
		Args:  cobra.NoArgs,
		Example: `  quartersctl --org org_123 properties create -f loft.yaml
  quartersctl --org org_123 properties create -f loft.json --publish --json`,
		RunE: func(c *cobra.Command, _ []string) error {
			return a.writeProperty(c, "")
		},
	}
	replace := &cobra.Command{
		Use:     "replace PROPERTY_ID -f FILE",
		Short:   "Replace a property's whole draft with the PropertyDraft in a JSON or YAML file",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 properties replace prop_1 -f loft.yaml --publish`,
		RunE: func(c *cobra.Command, args []string) error {
			return a.writeProperty(c, args[0])
		},
	}
	for _, c := range []*cobra.Command{create, replace} {
		c.Flags().StringP("file", "f", "", "PropertyDraft as JSON (.json) or YAML; - reads stdin")
		c.Flags().Bool("publish", false, "publish the property afterwards")
		_ = c.MarkFlagRequired("file")
	}
	get := &cobra.Command{
		Use:     "get PROPERTY_ID",
		Short:   "Show a property and whether it is published (--json: with its draft)",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 properties get prop_1 --json | jq .property.draft`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			raw, err := ad.get(c.Context(), orgPath(o, "properties", args[0]))
			if err != nil {
				return err
			}
			return show(a, raw, "property", a.printProperty)
		},
	}
	publish := &cobra.Command{
		Use:     "publish PROPERTY_ID",
		Short:   "Publish the draft as the listing's new snapshot",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 properties publish prop_1`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			raw, err := ad.post(c.Context(), orgPath(o, "properties", args[0], "publish"), nil)
			if err != nil {
				return err
			}
			return show(a, raw, "listing", a.printListing)
		},
	}
	unpublish := &cobra.Command{
		Use:     "unpublish PROPERTY_ID",
		Short:   "Take the listing out of the public API (publish brings it back)",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 properties unpublish prop_1`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			if _, err := ad.post(c.Context(), orgPath(o, "properties", args[0], "unpublish"), nil); err != nil {
				return err
			}
			return a.done("unpublished "+args[0], "propertyId", args[0])
		},
	}
	del := &cobra.Command{
		Use:     "delete PROPERTY_ID",
		Short:   "Delete a property (and its listing)",
		Args:    cobra.ExactArgs(1),
		Example: `  quartersctl --org org_123 properties delete prop_1`,
		RunE: func(c *cobra.Command, args []string) error {
			ad, o, err := a.adminOrg()
			if err != nil {
				return err
			}
			if err := ad.del(c.Context(), orgPath(o, "properties", args[0])); err != nil {
				return err
			}
			return a.done("deleted "+args[0], "propertyId", args[0])
		},
	}
	cmd.AddCommand(create, replace, get, publish, unpublish, del)
	return cmd
}

// writeProperty creates (id empty) or replaces a property from -f, then
// publishes it with --publish.
func (a *app) writeProperty(c *cobra.Command, id string) error {
	ad, o, err := a.adminOrg()
	if err != nil {
		return err
	}
	path, _ := c.Flags().GetString("file")
	draft, err := readDoc(path, a.stdin)
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if id == "" {
		raw, err = ad.post(c.Context(), orgPath(o, "properties"), draft)
	} else {
		raw, err = ad.do(c.Context(), http.MethodPut, orgPath(o, "properties", id), draft)
	}
	if err != nil {
		return err
	}
	if pub, _ := c.Flags().GetBool("publish"); !pub {
		return show(a, raw, "property", a.printProperty)
	}
	var env struct {
		Property property `json:"property"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	lraw, err := ad.post(c.Context(), orgPath(o, "properties", env.Property.ID, "publish"), nil)
	if err != nil {
		return fmt.Errorf("property %s saved, publish failed: %w", env.Property.ID, err)
	}
	if a.jsonOut() {
		return printJSON(a.out, map[string]json.RawMessage{"property": mustField(raw, "property"), "listing": mustField(lraw, "listing")})
	}
	var l listingSnapshot
	if err := json.Unmarshal(mustField(lraw, "listing"), &l); err != nil {
		return fmt.Errorf("decode listing: %w", err)
	}
	env.Property.Published, env.Property.PublishedAt = true, l.PublishedAt
	return a.printProperty(env.Property)
}

// mustField is one field of a JSON object, or null.
func mustField(raw json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m[key] == nil {
		return json.RawMessage("null")
	}
	return m[key]
}
