// Package client is the Go client of the Quarters public API
// (/api/v1, described by pkg/openapi/openapi.yaml): published listings and
// their live calendar, reservations, tenancy agreements and their PDFs,
// and inquiries. Package quarters.dev/pkg/client/webhook receives the
// API's signed webhooks.
//
// # Authentication
//
// [New] takes the base address (ending in /api/v1) and one credential set.
// The client exchanges it for an access token on first use
// (POST /oauth2/token, client-credentials grant), keeps the token until
// shortly before it expires, and sends it on every call. When a call
// answers 401 the client mints a new token and repeats the call once;
// concurrent callers share a single exchange. [WithBasicAuth] sends the
// credentials to the token endpoint as HTTP Basic; [WithBasicAuthOnly]
// sends them on every call instead of a token.
//
// # Errors and retries
//
// A call the API refuses returns an [*Error] carrying the status, the
// stable error slug (Code, one of the Code constants) and a message.
// Calls that may safely be repeated (GETs, and the agreement PUTs the API
// defines as idempotent) are retried on transport errors, 429 and 5xx with
// exponential backoff and jitter, honouring Retry-After (see
// [RetryPolicy]). [Client.CreateInquiry] is never retried: each POST
// creates an inquiry. Every call takes a context, which bounds its waits.
//
// # Following changes
//
// [Client.NewSync] follows changed reservations with the updatedSince read,
// without missing a change made while it pages, and without yielding a
// reservation twice in one pass; see [Sync] for the guarantee. Webhooks
// tell when to run a pass; a periodic pass recovers a missed delivery.
//
// # Forward compatibility
//
// The API may add fields without notice. The typed models ignore unknown
// fields; [Listing] and [Reservation] also keep the JSON as sent in Raw.
package client
