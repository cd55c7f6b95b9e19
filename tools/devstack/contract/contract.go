// Package contract checks HTTP exchanges with Quarters against its OpenAPI
// documents (pkg/openapi): the public API under /api/v1 and the admin API
// under /admin/v1. Every request is validated (parameters, headers, body), and
// every response (the status is declared for the operation, the declared
// headers, the body schema), with libopenapi-validator.
//
// A request the document forbids may be answered with a 4xx: that is how the
// API refuses it, and end-to-end tests send such requests on purpose. It is a
// contract failure only when the API accepts it (a 2xx or 3xx answer). A path
// or method the document does not declare must answer the standard 404 body.
package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"quarters.dev/pkg/openapi"
)

// Base paths of the two APIs.
const (
	PublicBase = "/api/v1"
	AdminBase  = "/admin/v1"
)

// Checker validates exchanges against both documents.
type Checker struct {
	public, admin *api
}

type api struct {
	name  string
	base  string
	model *v3.Document
	v     validator.Validator
	mu    sync.Mutex // the validator's caches are not documented as safe for concurrent use
}

var (
	defaultOnce    sync.Once
	defaultChecker *Checker
	defaultErr     error
)

// Default returns the checker of the embedded documents, built once.
func Default() (*Checker, error) {
	defaultOnce.Do(func() {
		pub, err := openapi.Public()
		if err != nil {
			defaultErr = err
			return
		}
		adm, err := openapi.Admin()
		if err != nil {
			defaultErr = err
			return
		}
		defaultChecker, defaultErr = New(pub.JSON, adm.JSON)
	})
	return defaultChecker, defaultErr
}

// New builds a checker from the public and admin documents (JSON or YAML).
func New(publicDoc, adminDoc []byte) (*Checker, error) {
	pub, err := newAPI("public", PublicBase, publicDoc)
	if err != nil {
		return nil, err
	}
	adm, err := newAPI("admin", AdminBase, adminDoc)
	if err != nil {
		return nil, err
	}
	return &Checker{public: pub, admin: adm}, nil
}

func newAPI(name, base string, doc []byte) (*api, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("%s document: %w", name, err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("%s document: %w", name, err)
	}
	// The documents' server is a variable ({base_url}); requests are matched
	// below the API's base path.
	m.Model.Servers = []*v3.Server{{URL: base}}
	v := validator.NewValidatorFromV3Model(&m.Model,
		config.WithFormatAssertions(),
		config.WithURLEncodedBodyValidation(),
		// Both authentications of the public API (bearer token and HTTP
		// Basic) are accepted; a refusal is checked as a 401 response.
		config.WithoutSecurityValidation(),
	)
	return &api{name: name, base: base, model: &m.Model, v: v}, nil
}

// Exchange is one request and its response, with both bodies read.
type Exchange struct {
	Request      *http.Request
	RequestBody  []byte
	Response     *http.Response
	ResponseBody []byte
}

// Check returns the contract failures of one exchange; none for a path
// outside both APIs.
func (c *Checker) Check(x Exchange) []string {
	p := x.Request.URL.Path
	var a *api
	switch {
	case p == PublicBase || strings.HasPrefix(p, PublicBase+"/"):
		a = c.public
	case p == AdminBase || strings.HasPrefix(p, AdminBase+"/"):
		a = c.admin
	default:
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.check(x)
}

func (a *api) check(x Exchange) []string {
	var out []string
	fail := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	status := x.Response.StatusCode

	req := x.Request.Clone(x.Request.Context())
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	pathItem, errs, pathValue := paths.FindPath(req, a.model, nil)
	if pathItem == nil || len(errs) > 0 || helpers.ExtractOperation(req, pathItem) == nil {
		// Not in the document: only the standard 404 may answer.
		if status != http.StatusNotFound {
			fail("%s %s is not in the %s document, and it answered %d instead of 404 not_found", req.Method, req.URL.Path, a.name, status)
		}
		if msg := notFoundBody(x.ResponseBody); msg != "" {
			fail("%s %s (not in the %s document): %s", req.Method, req.URL.Path, a.name, msg)
		}
		if cc := x.Response.Header.Get("Cache-Control"); cc != "no-store" {
			fail("%s %s: Cache-Control %q, want no-store", req.Method, req.URL.Path, cc)
		}
		return out
	}

	if ok, errs := a.v.ValidateHttpRequestSyncWithPathItem(req, pathItem, pathValue); !ok && status < 400 {
		for _, e := range errs {
			fail("%s %s answered %d to a request the %s document forbids: %s", req.Method, req.URL.Path, status, a.name, describe(e))
		}
	}

	resp := *x.Response
	resp.Body = io.NopCloser(bytes.NewReader(x.ResponseBody))
	if ok, errs := a.v.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(req, &resp, pathItem, pathValue); !ok {
		for _, e := range errs {
			fail("%s %s answered %d: %s", req.Method, req.URL.Path, status, describe(e))
		}
	}
	if r := declared(helpers.ExtractOperation(req, pathItem), status); r != nil && (r.Content == nil || r.Content.Len() == 0) && len(x.ResponseBody) > 0 && req.Method != http.MethodHead {
		fail("%s %s answered %d with a body, but the %s document declares none: %.200s", req.Method, req.URL.Path, status, a.name, x.ResponseBody)
	}
	return out
}

// declared returns the response the operation declares for status.
func declared(op *v3.Operation, status int) *v3.Response {
	if op == nil || op.Responses == nil || op.Responses.Codes == nil {
		return nil
	}
	if r := op.Responses.Codes.GetOrZero(fmt.Sprint(status)); r != nil {
		return r
	}
	if r := op.Responses.Codes.GetOrZero(fmt.Sprintf("%dXX", status/100)); r != nil {
		return r
	}
	return op.Responses.Default
}

// notFoundBody checks the standard 404 body: exactly {error: not_found, message}.
func notFoundBody(body []byte) string {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Sprintf("the 404 body is not a JSON object: %.200q", body)
	}
	if m["error"] != "not_found" {
		return fmt.Sprintf("404 body error %v, want not_found", m["error"])
	}
	if msg, ok := m["message"].(string); !ok || msg == "" {
		return "404 body without a message"
	}
	for k := range m {
		if k != "error" && k != "message" {
			return fmt.Sprintf("404 body has the undeclared field %q", k)
		}
	}
	return ""
}

func describe(e *liberrors.ValidationError) string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Reason != "" && e.Reason != e.Message {
		b.WriteString(" (" + e.Reason + ")")
	}
	for _, s := range e.SchemaValidationErrors {
		b.WriteString("; ")
		if s.FieldPath != "" {
			b.WriteString(s.FieldPath + ": ")
		} else if len(s.InstancePath) > 0 {
			b.WriteString("/" + strings.Join(s.InstancePath, "/") + ": ")
		}
		b.WriteString(s.Reason)
	}
	return b.String()
}
