package client_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"quarters.dev/pkg/client"
	"quarters.dev/pkg/client/webhook"
	"quarters.dev/pkg/openapi"
)

// goTypes names the Go type of every component schema of the public
// OpenAPI document that describes a JSON object. deliveryData names the
// data type of each webhook delivery schema (webhook.Event.Data is an
// interface).
var (
	goTypes = map[string]any{
		"Error":              client.Error{},
		"TokenError":         client.TokenError{},
		"TokenRequest":       client.TokenRequest{},
		"Token":              client.Token{},
		"Listing":            client.Listing{},
		"ListingPricing":     client.ListingPricing{},
		"Terms":              client.Terms{},
		"Address":            client.Address{},
		"Room":               client.Room{},
		"Bed":                client.Bed{},
		"Image":              client.Image{},
		"Description":        client.Description{},
		"Translation":        client.Translation{},
		"CalendarDay":        client.CalendarDay{},
		"ReservationFields":  client.Reservation{},
		"Reservation":        client.Reservation{},
		"ReservationPricing": client.ReservationPricing{},
		"Contact":            client.Contact{},
		"PropertyIdentity":   client.PropertyIdentity{},
		"Guest":              client.Guest{},
		"Agreement":          client.Agreement{},
		"ArchivedDocument":   client.ArchivedDocument{},
		"AgreementEnvelope":  client.AgreementEnvelope{},
		"Signer":             client.Signer{},
		"AgreementInput":     client.AgreementInput{},
		"SignerInput":        client.SignerInput{},
		"InquiryInput":       client.InquiryInput{},
		"DeliveryEnvelope":   webhook.Event{},
		"ListingData":        webhook.ListingData{},
		"ReservationData":    webhook.ReservationData{},
	}
	deliveryData = map[string]any{
		"ListingUpdatedDelivery":     webhook.ListingData{},
		"ListingDeletedDelivery":     webhook.ListingData{},
		"CalendarUpdatedDelivery":    webhook.CalendarData{},
		"ReservationCreatedDelivery": webhook.ReservationData{},
		"ReservationUpdatedDelivery": webhook.ReservationUpdatedData{},
		"ReservationDeletedDelivery": webhook.ReservationData{},
		"AgreementRequestedDelivery": webhook.AgreementRequestedData{},
		"PingDelivery":               webhook.PingData{},
	}
	// notModelled are the component schemas without a Go type, and why.
	notModelled = map[string]string{
		"OpenAPIDocument": "the API's own description, served as it is",
	}
	// inputs are the request bodies: their required fields must always be
	// sent, so their Go fields must not be omitempty.
	inputs = []string{"TokenRequest", "AgreementInput", "SignerInput", "InquiryInput"}
	// zeroForNull are nullable fields the Go types carry without a pointer,
	// because null and the zero value mean the same.
	zeroForNull = []string{"ListingPricing.rateBasis", "ReservationPricing.rateBasis"}
)

type schema = map[string]any

// TestModelsMatchTheOpenAPIDocument checks every property of every
// component schema against the json tags of its Go type, both ways and
// down through nested objects, arrays and maps.
func TestModelsMatchTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	var doc schema
	if err := json.Unmarshal(openapi.MustPublic().JSON, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(schema)["schemas"].(schema)
	ck := checker{t: t, doc: doc}
	for name, raw := range schemas {
		s := raw.(schema)
		switch {
		case goTypes[name] != nil:
			ck.object(name, s, reflect.TypeOf(goTypes[name]), slices.Contains(inputs, name))
		case deliveryData[name] != nil:
			ck.object(name, s, reflect.TypeOf(webhook.Event{}), false)
			data := ck.resolve(ck.properties(s)["data"])
			ck.object(name+".data", data, reflect.TypeOf(deliveryData[name]), false)
		case notModelled[name] != "":
		default:
			if len(ck.properties(s)) > 0 {
				t.Errorf("schema %s has properties but no Go type", name)
			}
		}
	}
	for name := range goTypes {
		if schemas[name] == nil {
			t.Errorf("Go type for schema %s, which the document does not have", name)
		}
	}
	for name := range deliveryData {
		if schemas[name] == nil {
			t.Errorf("Go type for schema %s, which the document does not have", name)
		}
	}
}

type checker struct {
	t   *testing.T
	doc schema
}

// resolve follows $ref and picks the non-null variant of a oneOf.
func (c checker) resolve(s schema) schema {
	for s != nil {
		if ref, ok := s["$ref"].(string); ok {
			s = c.pointer(ref)
			continue
		}
		if one, ok := s["oneOf"].([]any); ok {
			var rest []any
			for _, v := range one {
				if v.(schema)["type"] != "null" {
					rest = append(rest, v)
				}
			}
			if len(rest) == 1 {
				merged := schema{}
				for k, v := range c.resolve(rest[0].(schema)) {
					merged[k] = v
				}
				merged["x-nullable"] = true
				return merged
			}
		}
		if all, ok := s["allOf"].([]any); ok && s["properties"] == nil && len(all) == 1 {
			// `allOf: [$ref]` with a description: the referred schema.
			inner := c.resolve(all[0].(schema))
			if inner["properties"] == nil {
				return inner
			}
		}
		return s
	}
	return nil
}

func (c checker) pointer(ref string) schema {
	var cur any = c.doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		cur = cur.(schema)[part]
	}
	return cur.(schema)
}

// properties merges the properties of s and of its allOf members.
func (c checker) properties(s schema) map[string]schema {
	out := map[string]schema{}
	s = c.resolve(s)
	if all, ok := s["allOf"].([]any); ok {
		for _, m := range all {
			for k, v := range c.properties(m.(schema)) {
				out[k] = v
			}
		}
	}
	if ps, ok := s["properties"].(schema); ok {
		for k, v := range ps {
			if prev, ok := out[k]; ok {
				// An override (a const event name, a typed data): keep both.
				merged := schema{}
				for pk, pv := range prev {
					merged[pk] = pv
				}
				for pk, pv := range c.resolve(v.(schema)) {
					merged[pk] = pv
				}
				out[k] = merged
				continue
			}
			out[k] = v.(schema)
		}
	}
	return out
}

func (c checker) required(s schema) []string {
	var out []string
	s = c.resolve(s)
	if all, ok := s["allOf"].([]any); ok {
		for _, m := range all {
			out = append(out, c.required(m.(schema))...)
		}
	}
	for _, r := range asList(s["required"]) {
		out = append(out, r.(string))
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

// jsonFields returns the fields of struct t by JSON name.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

func (c checker) object(path string, s schema, t reflect.Type, input bool) {
	c.t.Helper()
	props := c.properties(s)
	fields := jsonFields(t)
	for name := range props {
		if _, ok := fields[name]; !ok {
			c.t.Errorf("%s.%s: in the OpenAPI document, missing in Go type %s", path, name, t)
		}
	}
	for name := range fields {
		if _, ok := props[name]; !ok {
			c.t.Errorf("%s.%s: in Go type %s, not in the OpenAPI document", path, name, t)
		}
	}
	required := c.required(s)
	for name, p := range props {
		f, ok := fields[name]
		if !ok {
			continue
		}
		if input && slices.Contains(required, name) && strings.Contains(f.Tag.Get("json"), "omitempty") {
			c.t.Errorf("%s.%s: required in a request body, but omitempty in Go", path, name)
		}
		c.value(path+"."+name, p, f.Type, slices.Contains(zeroForNull, t.Name()+"."+name))
	}
}

// value checks that Go type t can carry values of schema s.
func (c checker) value(path string, s schema, t reflect.Type, zeroIsNull bool) {
	c.t.Helper()
	s = c.resolve(s)
	types := map[string]bool{}
	switch v := s["type"].(type) {
	case string:
		types[v] = true
	case []any:
		for _, x := range v {
			types[x.(string)] = true
		}
	}
	if s["x-nullable"] == true {
		types["null"] = true
	}
	if e := asList(s["enum"]); slices.Contains(e, any(nil)) {
		types["null"] = true
	}
	pointer := t.Kind() == reflect.Pointer
	if pointer {
		t = t.Elem()
	}
	nullable := types["null"]
	delete(types, "null")
	if nullable && !pointer && !zeroIsNull && t.Kind() != reflect.Slice && t.Kind() != reflect.Map && t.Kind() != reflect.Interface {
		c.t.Errorf("%s: nullable in the OpenAPI document, but Go type %s cannot be nil", path, t)
	}
	if len(types) == 0 && len(c.properties(s)) > 0 {
		types["object"] = true
	}
	if len(types) != 1 {
		if len(types) > 1 {
			c.t.Errorf("%s: schema types %v", path, types)
		}
		return
	}
	timeType := reflect.TypeOf(time.Time{})
	for typ := range types {
		ok := true
		switch typ {
		case "string":
			if s["format"] == "date-time" {
				ok = t == timeType
			} else {
				ok = t.Kind() == reflect.String
			}
		case "integer":
			ok = t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64
		case "number":
			ok = t.Kind() == reflect.Float64
		case "boolean":
			ok = t.Kind() == reflect.Bool
		case "array":
			ok = t.Kind() == reflect.Slice
			if ok {
				if items, has := s["items"].(schema); has {
					c.value(path+"[]", items, t.Elem(), false)
				}
			}
		case "object":
			switch {
			case t == reflect.TypeFor[webhook.Data]():
				// A delivery's data, checked against its concrete type
				// (deliveryData).
			case len(c.properties(s)) > 0:
				ok = t.Kind() == reflect.Struct
				if ok {
					c.object(path, s, t, false)
				}
			case s["additionalProperties"] != nil && s["additionalProperties"] != false:
				ok = t.Kind() == reflect.Map
				if ap, has := s["additionalProperties"].(schema); ok && has {
					c.value(path+"{}", ap, t.Elem(), false)
				}
			default:
				// An untyped object (metadata, a delivery's data).
				ok = t.Kind() == reflect.Map || t.Kind() == reflect.Interface
			}
		}
		if !ok {
			c.t.Errorf("%s: schema type %s (format %v), Go type %s", path, typ, s["format"], t)
		}
	}
}
