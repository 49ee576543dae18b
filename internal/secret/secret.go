// Package secret holds a credential where no reflection-based printer can
// reach it. It imports nothing, so the webhook package can use it without
// the API client.
package secret

// Value holds one credential: a bearer token, a webhook's shared secret.
//
// A type keeps a credential as an unexported *Value field and gives the
// caller an accessor method.
//
// Why not a string field and redacting methods? The methods that redact a
// type are String, Format, LogValue and MarshalJSON. They are not called
// when the value sits in an unexported field of the application's own
// struct. Then fmt, slog's text handler and their kin walk the fields by
// reflection, and a string field would be printed.
//
// A *Value is printed as an address instead. That is how fmt prints a
// pointer nested in a struct. And encoding/json, encoding/xml and gob skip
// unexported fields. The credential itself is captured by a func, which
// reflection cannot look into. Some printers follow pointers and read
// unexported fields through package unsafe. Even they show a func's
// address, never the text.
type Value struct{ reveal func() string }

// New returns a Value holding s, or nil for the empty string.
// A zero holder and an empty credential are thus the same.
func New(s string) *Value {
	if s == "" {
		return nil
	}
	return &Value{reveal: func() string { return s }}
}

// Reveal returns the credential; "" for a nil Value.
func (v *Value) Reveal() string {
	if v == nil {
		return ""
	}
	return v.reveal()
}
