package domain

import (
	"testing"
	"time"

	"quarters.dev/pkg/apperr"
)

func ptr[T any](v T) *T { return &v }

func TestNewOrgDefaultsAndRules(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o, err := NewOrg("o1", OrgChanges{Name: ptr("  Acme  ")}, now)
	if err != nil {
		t.Fatal(err)
	}
	if o.Name != "Acme" || o.ContractProvider != ProviderQuarters || o.InquiryDailyLimit != 500 || o.Version != 1 {
		t.Fatalf("defaults: %+v", o)
	}
	bad := map[string]OrgChanges{
		"missing name":   {},
		"blank name":     {Name: ptr("   ")},
		"provider":       {Name: ptr("a"), ContractProvider: ptr("docusign")},
		"negative limit": {Name: ptr("a"), InquiryDailyLimit: ptr(int64(-1))},
		"huge limit":     {Name: ptr("a"), InquiryDailyLimit: ptr(int64(MaxInquiryDailyLimit + 1))},
	}
	for name, c := range bad {
		if _, err := NewOrg("o", c, now); !apperr.Is(err, apperr.InvalidRequest) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func TestApplyReportsChanges(t *testing.T) {
	t.Parallel()
	o, _ := NewOrg("o1", OrgChanges{Name: ptr("Acme")}, time.Now())
	if changed, err := o.Apply(OrgChanges{Name: ptr("Acme")}); err != nil || changed {
		t.Fatalf("same name: changed %v err %v", changed, err)
	}
	if changed, err := o.Apply(OrgChanges{ContractProvider: ptr("external")}); err != nil || !changed || o.ContractProvider != ProviderExternal {
		t.Fatalf("provider: changed %v err %v org %+v", changed, err, o)
	}
	before := o
	if _, err := o.Apply(OrgChanges{Name: ptr("B"), InquiryDailyLimit: ptr(int64(-5))}); err == nil || o != before {
		t.Fatalf("a rejected change must leave the org untouched: %+v", o)
	}
}
