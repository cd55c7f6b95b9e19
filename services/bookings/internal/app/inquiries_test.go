package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"quarters.dev/pkg/apperr"
	"quarters.dev/pkg/testenv"
	"quarters.dev/services/bookings/internal/adapters"
	"quarters.dev/services/bookings/internal/app"
	"quarters.dev/services/bookings/internal/domain"
)

// failingInquiries stands in for the store: it fails every insert until
// told otherwise.
type failingInquiries struct {
	app.Inquiries
	fail   bool
	stored []domain.Inquiry
}

func (f *failingInquiries) Insert(_ context.Context, q domain.Inquiry, _ *domain.Confirmation) error {
	if f.fail {
		return errors.New("store unavailable")
	}
	f.stored = append(f.stored, q)
	return nil
}

func TestFailedStoreGivesTheSlotBack(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	store := &failingInquiries{fail: true}
	// A unique org per run: the shared Redis is never flushed.
	orgID := "org_" + time.Now().Format("150405.000000000")
	svc := &app.Service{Inquiries: store, Projections: orgProjection{org: orgID}, Quota: adapters.NewQuota(rdb, time.Hour)}
	in := domain.InquiryInput{PropertyID: ptr("lst_1"), LastName: ptr("Doe"), Email: ptr("jane@example.com")}
	ctx := context.Background()
	if _, err := svc.CreateInquiry(ctx, orgID, in); err == nil {
		t.Fatal("stored despite a failing store")
	}
	store.fail = false
	if _, err := svc.CreateInquiry(ctx, orgID, in); err != nil {
		t.Fatalf("the slot of the failed inquiry was not given back: %v", err)
	}
	if _, err := svc.CreateInquiry(ctx, orgID, in); !apperr.Is(err, apperr.RateLimited) {
		t.Fatalf("second inquiry over a limit of 1: %v", err)
	}
	var rl *app.RateLimitedError
	if _, err := svc.CreateInquiry(ctx, orgID, in); !errors.As(err, &rl) || rl.RetryAfterSeconds() < 1 || rl.RetryAfterSeconds() > 3600 {
		t.Fatalf("retry after: %v", err)
	}
	if len(store.stored) != 1 {
		t.Fatalf("%d stored, want 1", len(store.stored))
	}
	if ttl := rdb.PTTL(ctx, "quarters:bookings:inquiries:"+orgID).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("allowance key TTL %v, want within the window", ttl)
	}
}

// orgProjection knows one org with a limit of 1 and its listing lst_1.
type orgProjection struct {
	app.Projections
	org string
}

func (p orgProjection) Org(context.Context, string) (domain.Org, bool, error) {
	return domain.Org{ID: p.org, InquiryDailyLimit: 1}, true, nil
}

func (p orgProjection) Property(_ context.Context, id string) (domain.Property, bool, error) {
	return domain.Property{ID: id, OrgID: p.org, Published: true}, id == "lst_1", nil
}

func ptr(s string) *string { return &s }
