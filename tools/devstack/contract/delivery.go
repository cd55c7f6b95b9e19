package contract

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"

	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/schema_validation"
)

var signature = regexp.MustCompile(`^sha256=[0-9a-f]{64}$`)

// CheckDelivery checks a webhook delivery a receiver got against the public
// document's `webhooks` section: the body schema of its event, the
// x-legacy-* headers (event and delivery id equal to the body's, the
// signature's form) and, when secret is not empty, the signature itself.
func (c *Checker) CheckDelivery(h http.Header, body []byte, secret string) []string {
	var out []string
	fail := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	var env struct {
		ID    string `json:"id"`
		Event string `json:"event"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return []string{fmt.Sprintf("delivery body is not a JSON object: %v", err)}
	}
	if got := h.Get("x-legacy-event"); got != env.Event {
		fail("x-legacy-event %q, body event %q", got, env.Event)
	}
	if got := h.Get("x-legacy-delivery"); got == "" || got != env.ID {
		fail("x-legacy-delivery %q, body id %q", got, env.ID)
	}
	sig := h.Get("x-legacy-signature")
	if !signature.MatchString(sig) {
		fail("x-legacy-signature %q is not sha256= and 64 lowercase hex digits", sig)
	} else if secret != "" {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(sig), []byte(want)) {
			fail("x-legacy-signature does not match the body under the endpoint's secret")
		}
	}
	a := c.public
	a.mu.Lock()
	defer a.mu.Unlock()
	item := a.model.Webhooks.GetOrZero(env.Event)
	if item == nil || item.Post == nil || item.Post.RequestBody == nil {
		fail("event %q is not in the document's webhooks", env.Event)
		return out
	}
	mt := item.Post.RequestBody.Content.GetOrZero("application/json")
	if mt == nil || mt.Schema == nil {
		fail("event %q has no JSON body in the document", env.Event)
		return out
	}
	if ok, errs := schema_validation.NewSchemaValidator(config.WithFormatAssertions()).ValidateSchemaBytes(mt.Schema.Schema(), body); !ok {
		for _, e := range errs {
			fail("%s delivery: %s", env.Event, describe(e))
		}
	}
	return out
}
