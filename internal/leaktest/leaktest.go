// Package leaktest checks that values holding secrets never show them when
// formatted or logged. For tests that search a log, its Logger logs a run
// through slog's JSON and text handlers at once. The tests of the root
// package, of webhook and of the integrations use it. It imports only the
// standard library.
package leaktest

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// Verbs are the fmt verbs and flags a secret holder must survive.
var Verbs = []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%X", "%o", "%O", "%b", "%c", "%U", "%e", "%t",
	"% x", "%#x", "%-40s", "%.80s", "%+q", "%#q", "%08d"}

// Forms returns the ways each secret may appear in output.
// These are its text and its bytes in hex (both cases), octal and decimal.
func Forms(secrets ...string) []string {
	var forms []string
	for _, s := range secrets {
		b := []byte(s)
		forms = append(forms, s, hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
			fmt.Sprintf("%o", b), fmt.Sprintf("%d", b))
	}
	return forms
}

// NoSecret prints and encodes every value, and fails t when any output
// contains one of forms.
//
// Each value is formatted with every verb in Verbs. It is logged through
// slog's JSON and text handlers. Both happen three ways:
//   - on its own;
//   - in an unexported field of a caller's struct;
//   - in an exported field.
//
// The unexported field is the hard case. fmt and slog's text handler walk
// such a field by reflection. They cannot call its String, Format or
// LogValue.
//
// Each value is also encoded with encoding/json, encoding/xml and gob. An
// encoding error is fine; whatever was written before it is checked too.
//
// Tests pass their own caller structs as values as well, with the holders
// as typed fields. That is because gob and xml cannot encode a value held
// in an interface field.
func NoSecret(t testing.TB, values map[string]any, forms []string) {
	t.Helper()
	check := func(name, how, out string) {
		t.Helper()
		for _, s := range forms {
			if strings.Contains(out, s) {
				t.Errorf("%s %s shows a secret: %s", name, how, out)
				return
			}
		}
	}
	for name, v := range values {
		for _, w := range []struct {
			how string
			v   any
		}{
			{"", v},
			{"in an unexported field", struct{ held any }{v}},
			{"in an exported field", struct{ Held any }{v}},
		} {
			for _, verb := range Verbs {
				check(name, strings.TrimSpace(w.how+" formatted with "+verb), fmt.Sprintf(verb, w.v))
			}
			var buf bytes.Buffer
			slog.New(slog.NewJSONHandler(&buf, nil)).Info("value", "v", w.v)
			slog.New(slog.NewTextHandler(&buf, nil)).Info("value", "v", w.v)
			check(name, strings.TrimSpace(w.how+" logged with slog"), buf.String())
		}
		j, _ := json.Marshal(v)
		check(name, "encoded with encoding/json", string(j))
		var x bytes.Buffer
		_ = xml.NewEncoder(&x).Encode(v)
		check(name, "encoded with encoding/xml", x.String())
		var g bytes.Buffer
		_ = gob.NewEncoder(&g).Encode(v)
		check(name, "encoded with gob", g.String())
	}
}

// Logger returns a logger that writes every record from level up to two
// handlers at once. slog's JSON handler writes to jsonOut, its text handler
// to textOut. A test can then search one run's output in both forms. The
// two differ. The text handler walks a value's fields by reflection. The
// JSON one calls the value's methods. And each escapes differently.
func Logger(jsonOut, textOut io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	return slog.New(fanout{slog.NewJSONHandler(jsonOut, opts), slog.NewTextHandler(textOut, opts)})
}

// fanout is a slog.Handler that hands every record to several handlers.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range f {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range f {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f fanout) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (f fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(name)
	}
	return out
}
