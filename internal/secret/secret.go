// Package secret holds a credential where no reflection-based printer can
// reach it. It imports nothing, so the webhook package can use it without
// the API client.
package secret

// Value holds one credential: a bearer token, a webhook's shared secret.
//
// A type keeps a credential as an unexported *Value field and gives the
// caller an accessor method. The methods that redact a type (String,
// Format, LogValue, MarshalJSON) are not called when the value sits in an
// unexported field of the application's own struct: fmt, slog's text
// handler and their kin then walk the fields by reflection, and a string
// field would be printed. A *Value is printed as an address instead (fmt
// prints a pointer nested in a struct that way), and encoding/json,
// encoding/xml and gob skip unexported fields. The credential itself is
// captured by a func, which reflection cannot look into, so even printers
// that follow pointers and read unexported fields through package unsafe
// show a func's address, never the text.
type Value struct{ reveal func() string }

// New returns a Value holding s, or nil for the empty string, so that a
// zero holder and an empty credential are the same.
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
