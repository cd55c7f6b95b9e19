package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"quarters.dev/pkg/client"
)

// A client per credential set; it fetches and renews its token on its own.
func Example() {
	api := startFakeAPI() // stands in for https://…/api/v1
	defer api.Close()

	c := client.New(api.URL(), "qc_demo", "s3cret")
	listings, err := c.Listings(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range listings {
		rent := "not set"
		if p := l.Pricing.MonthlyRateCents; p != nil {
			rent = fmt.Sprintf("€%d.%02d a month", *p/100, *p%100)
		}
		fmt.Printf("%s (%s, %s): %s, %g bathrooms\n", l.Nickname, l.Address.City, l.Timezone, rent, l.Bathrooms)
		fmt.Println(*l.LocalDescription("pt").Title, "/", *l.LocalDescription("pt").Summary)
	}
	// Output:
	// Loft Alfama (Lisbon, Europe/Lisbon): €1500.00 a month, 1.5 bathrooms
	// Loft luminoso / <p>Quiet street.</p>
}

// Options set the HTTP client, the retry policy and how the credentials
// travel.
func ExampleNew() {
	c := client.New("https://rentals.example.com/api/v1", "qc_demo", "s3cret",
		client.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}),
		client.WithRetry(client.RetryPolicy{MaxAttempts: 3, MinDelay: 500 * time.Millisecond, MaxDelay: 5 * time.Second, MaxRetryAfter: 30 * time.Second}),
		client.WithBasicAuth(),
		client.WithUserAgent("acme-channel-manager/2.1"),
	)
	_ = c
}

// Errors carry the API's slug to switch on.
func ExampleError() {
	api := startFakeAPI()
	defer api.Close()
	c := client.New(api.URL(), "qc_demo", "s3cret")

	_, err := c.Listing(context.Background(), "lst_gone")
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Code == client.CodeNotFound {
		fmt.Println(apiErr.Status, apiErr.Message)
	}
	// Output:
	// 404 No published listing has this id.
}

// An incremental sync: each pass yields what changed since the cursor;
// store the cursor and resume from it.
func ExampleClient_NewSync() {
	api := startFakeAPI()
	defer api.Close()
	api.add(3, false)
	c := client.New(api.URL(), "qc_demo", "s3cret")
	ctx := context.Background()

	s := c.NewSync(client.SyncCursor{}, client.SyncOptions{PageSize: 2})
	for r, err := range s.Changes(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("upsert", r.ID, r.Status)
	}
	cursor := s.Cursor() // persist it, e.g. as JSON

	api.change("res_0002")
	for r, err := range c.NewSync(cursor, client.SyncOptions{}).Changes(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("upsert", r.ID, r.Status)
	}
	// Output:
	// upsert res_0001 inquiry
	// upsert res_0002 inquiry
	// upsert res_0003 inquiry
	// upsert res_0002 reserved
}

// Every reservation matching a query, page after page.
func ExampleClient_AllReservations() {
	api := startFakeAPI()
	defer api.Close()
	api.add(5, false)
	c := client.New(api.URL(), "qc_demo", "s3cret")

	n := 0
	for _, err := range c.AllReservations(context.Background(), client.ReservationQuery{Sort: client.SortUpdatedAt, Limit: 2}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		n++
	}
	fmt.Println(n, "reservations")
	// Output:
	// 5 reservations
}

// The executed PDF streams up from any reader and down to any writer.
func ExampleClient_UploadAgreementDocument() {
	api := startFakeAPI()
	defer api.Close()
	c := client.New(api.URL(), "qc_demo", "s3cret")
	ctx := context.Background()

	pdf := strings.NewReader("%PDF-1.7\n…\n%%EOF\n") // an *os.File works the same
	a, err := c.UploadAgreementDocument(ctx, "res_0001", pdf, -1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.Document.Bytes, "bytes archived,", a.Document.Checksum[:15]+"…")

	var copy bytes.Buffer
	n, err := c.DownloadAgreementDocument(ctx, "res_0001", &copy)
	fmt.Println(n, "bytes downloaded", err)
	// Output:
	// 19 bytes archived, sha256:8103b08b…
	// 19 bytes downloaded <nil>
}

// Reporting the state of an envelope of an external e-signature provider.
func ExampleClient_ReportAgreement() {
	c := client.New("https://rentals.example.com/api/v1", "qc_demo", "s3cret")
	a, created, err := c.ReportAgreement(context.Background(), "res_0001", client.AgreementInput{
		ExternalID: "env-8f2c",
		Status:     client.AgreementSent,
		Signers: []client.SignerInput{
			{Role: "lessee", Email: client.Ptr("ann@example.com"), Status: "pending", SigningURL: client.Ptr("https://sign.example.com/s/1")},
		},
	})
	if err != nil {
		return
	}
	fmt.Println(a.Version, created)
}

// A booking-form submission. It is never retried: each call creates one.
func ExampleClient_CreateInquiry() {
	c := client.New("https://rentals.example.com/api/v1", "qc_demo", "s3cret")
	id, err := c.CreateInquiry(context.Background(), client.InquiryInput{
		PropertyID: "lst_1", FirstName: "Ann", LastName: "Tenant", Email: "ann@example.com",
		CheckIn: "2026-09-01", CheckOut: "2027-02-28", Adults: client.Ptr(2), Source: "website",
	})
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Code == client.CodeRateLimited {
		fmt.Println("allowance spent; retry in", apiErr.RetryAfter)
		return
	}
	fmt.Println(id, err)
}
