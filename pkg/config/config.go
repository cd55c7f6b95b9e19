// Package config fills a typed configuration struct from QUARTERS_*
// environment variables, so that every process refuses to start with a message
// naming the variable that is missing or malformed.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Load fills dst, a pointer to a struct, from the process environment.
//
// Fields are tagged `env:"QUARTERS_NAME"`, optionally `default:"value"` and
// `required:"true"`. Supported kinds: string, bool, int, int64, float64,
// time.Duration, *url.URL, []string (comma-separated) and nested or embedded
// structs (whose fields are read the same way). Every problem is reported,
// not just the first.
func Load(dst any) error { return LoadFrom(os.LookupEnv, dst) }

// LoadFrom is Load with an explicit lookup function.
func LoadFrom(lookup func(string) (string, bool), dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("config: Load needs a pointer to a struct, got %T", dst)
	}
	var errs []error
	fill(lookup, v.Elem(), &errs)
	return errors.Join(errs...)
}

var durationType = reflect.TypeFor[time.Duration]()
var urlType = reflect.TypeFor[*url.URL]()

func fill(lookup func(string) (string, bool), v reflect.Value, errs *[]error) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		fv := v.Field(i)
		name := f.Tag.Get("env")
		if name == "" {
			if fv.Kind() == reflect.Struct {
				fill(lookup, fv, errs)
			}
			continue
		}
		raw, ok := lookup(name)
		raw = strings.TrimSpace(raw)
		if !ok || raw == "" {
			def, hasDef := f.Tag.Lookup("default")
			if !hasDef {
				if f.Tag.Get("required") == "true" {
					*errs = append(*errs, fmt.Errorf("config: %s is required", name))
				}
				continue
			}
			raw = def
		}
		if err := set(fv, raw); err != nil {
			*errs = append(*errs, fmt.Errorf("config: %s: %w", name, err))
		}
	}
}

func set(fv reflect.Value, raw string) error {
	switch {
	case fv.Type() == durationType:
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 {
			return fmt.Errorf("must be a non-negative duration such as 20s or 500ms, got %q", raw)
		}
		fv.SetInt(int64(d))
		return nil
	case fv.Type() == urlType:
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("must be an absolute URL such as http://host:port, got %q", raw)
		}
		fv.Set(reflect.ValueOf(u))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("must be true or false, got %q", raw)
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return fmt.Errorf("must be an integer, got %q", raw)
		}
		fv.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return fmt.Errorf("must be a number, got %q", raw)
		}
		fv.SetFloat(n)
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported list type %s", fv.Type())
		}
		var items []string
		for _, s := range strings.Split(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		if len(items) == 0 {
			return fmt.Errorf("must be a comma-separated list, got %q", raw)
		}
		fv.Set(reflect.ValueOf(items))
	default:
		return fmt.Errorf("unsupported type %s", fv.Type())
	}
	return nil
}
