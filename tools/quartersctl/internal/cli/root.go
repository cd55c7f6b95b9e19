// Package cli implements the commands of quartersctl.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"quarters.dev/pkg/client"
)

// Exit codes of quartersctl.
const (
	ExitOK      = 0 // success
	ExitUsage   = 1 // bad flags or arguments, missing configuration, unreadable file
	ExitAPI4xx  = 2 // the API refused the request (4xx)
	ExitAPI5xx  = 3 // the API failed (5xx) or could not be reached
	ExitPartial = 4 // an import finished with rows that failed
)

// app is the state of one invocation: configuration, output and clients.
type app struct {
	v      *viper.Viper
	stdin  io.Reader
	out    io.Writer
	errOut io.Writer
	http   *http.Client
}

// Main runs quartersctl with args and returns its exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{v: viper.New(), stdin: stdin, out: stdout, errOut: stderr, http: &http.Client{}}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "error:", err)
	return exitCode(err)
}

// partialError is an import that finished with failed rows.
type partialError struct{ failed int }

func (e *partialError) Error() string { return fmt.Sprintf("%d rows failed", e.failed) }

func exitCode(err error) int {
	var pe *partialError
	if errors.As(err, &pe) {
		return ExitPartial
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		if ae.Status >= 400 && ae.Status < 500 {
			return ExitAPI4xx
		}
		return ExitAPI5xx
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ExitAPI5xx
	}
	return ExitUsage
}

const rootLong = `quartersctl drives Quarters from the command line.

Admin commands (orgs, credentials, properties, blocks, reservations create/update/delete,
webhooks, import) call /admin/v1 with the admin token. API commands (token, listings,
listing, calendar, reservations, reservation, inquiries, sync) call /api/v1 with a
credential set.

Configuration, highest precedence first: flags, environment (QUARTERS_URL,
QUARTERS_ADMIN_TOKEN, QUARTERS_ORG, QUARTERS_CLIENT_ID, QUARTERS_CLIENT_SECRET),
then the config file (--config, QUARTERS_CONFIG, or <user config dir>/quartersctl/config.yaml)
with the keys url, admin-token, org, client-id, client-secret.

Exit codes: 0 ok; 1 usage, configuration or local file error; 2 the API answered 4xx;
3 the API answered 5xx or could not be reached; 4 an import finished with failed rows.`

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "quartersctl",
		Short:         "Operate Quarters: admin API, public API, imports and sync",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		Example: `  export QUARTERS_URL=http://127.0.0.1:8080 QUARTERS_ADMIN_TOKEN=dev-admin-token
  quartersctl orgs create --name "Acme Rentals"
  quartersctl --org ORG_ID credentials create --name website
  quartersctl --client-id ID --client-secret SECRET listings --json`,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.loadConfig(cmd) },
	}
	pf := root.PersistentFlags()
	pf.String("url", "http://127.0.0.1:8080", "base URL of Quarters (the ingress), without /api/v1 or /admin/v1 [QUARTERS_URL]")
	pf.String("admin-token", "", "admin API token [QUARTERS_ADMIN_TOKEN]")
	pf.String("org", "", "organisation id for org-scoped admin commands [QUARTERS_ORG]")
	pf.String("client-id", "", "client id of a credential set, for API commands [QUARTERS_CLIENT_ID]")
	pf.String("client-secret", "", "client secret of a credential set, for API commands [QUARTERS_CLIENT_SECRET]")
	pf.String("config", "", "config file (YAML) [QUARTERS_CONFIG]")
	pf.Bool("json", false, "print the API's JSON instead of a table")
	pf.Duration("timeout", 30*time.Second, "timeout of each admin API request (public API requests: 30s) [QUARTERS_TIMEOUT]")
	for _, k := range []string{"url", "admin-token", "org", "client-id", "client-secret", "json", "timeout"} {
		_ = a.v.BindPFlag(k, pf.Lookup(k))
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath())
	})

	root.AddCommand(
		a.orgsCmd(), a.credentialsCmd(), a.propertiesCmd(), a.blocksCmd(), a.webhooksCmd(),
		a.tokenCmd(), a.listingsCmd(), a.listingCmd(), a.calendarCmd(), a.reservationsCmd(),
		a.reservationCmd(), a.inquiriesCmd(), a.syncCmd(), a.importCmd(),
	)
	return root
}

func (a *app) loadConfig(cmd *cobra.Command) error {
	v := a.v
	v.SetEnvPrefix("QUARTERS")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	path, _ := cmd.Flags().GetString("config")
	if path == "" {
		path = os.Getenv("QUARTERS_CONFIG")
	}
	explicit := path != ""
	if !explicit {
		if dir, err := os.UserConfigDir(); err == nil {
			path = filepath.Join(dir, "quartersctl", "config.yaml")
		}
	}
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		if explicit {
			return fmt.Errorf("config file: %w", err)
		}
		return nil
	}
	v.SetConfigFile(path)
	v.SetConfigType("yaml")
	if err := v.ReadInConfig(); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

func (a *app) baseURL() string { return strings.TrimRight(a.v.GetString("url"), "/") }

func (a *app) jsonOut() bool { return a.v.GetBool("json") }

func (a *app) org() (string, error) {
	o := a.v.GetString("org")
	if o == "" {
		return "", errors.New("no organisation: pass --org or set QUARTERS_ORG")
	}
	return o, nil
}

// api returns the public API client of the configured credential set.
func (a *app) api() (*client.Client, error) {
	id, secret := a.v.GetString("client-id"), a.v.GetString("client-secret")
	if id == "" || secret == "" {
		return nil, errors.New("no credential set: pass --client-id and --client-secret or set QUARTERS_CLIENT_ID and QUARTERS_CLIENT_SECRET")
	}
	return client.New(a.baseURL()+"/api/v1", id, secret), nil
}

// admin returns the admin API client.
func (a *app) admin() (*adminClient, error) {
	tok := a.v.GetString("admin-token")
	if tok == "" {
		return nil, errors.New("no admin token: pass --admin-token or set QUARTERS_ADMIN_TOKEN")
	}
	a.http.Timeout = a.v.GetDuration("timeout")
	return &adminClient{base: a.baseURL() + "/admin/v1", token: tok, http: a.http}, nil
}
