package secret

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestValue(t *testing.T) {
	if v := New(""); v != nil || v.Reveal() != "" {
		t.Fatalf("New(\"\") = %v, want nil revealing \"\"", v)
	}
	v := New("s3cr3t")
	if v.Reveal() != "s3cr3t" {
		t.Fatalf("Reveal = %q", v.Reveal())
	}
	// Copies of a holder are equal; the credential cannot be read back
	// through reflection: the only field is a func.
	type holder struct{ v *Value }
	a := holder{v}
	b := a
	if !reflect.DeepEqual(a, b) || a != b {
		t.Error("copies of a holder differ")
	}
	if f := reflect.ValueOf(v).Elem().Field(0); f.Kind() != reflect.Func {
		t.Errorf("field kind %s, want func", f.Kind())
	}
}

// What a caller's struct shows of a Value in an unexported and an exported
// field, through every printer and encoder of the standard library.
func TestValueInACallersStruct(t *testing.T) {
	type app struct {
		key    *Value
		Key    *Value
		Name   string
		nested struct{ k *Value }
	}
	a := app{key: New("s3cr3t"), Key: New("s3cr3t"), Name: "shop"}
	a.nested.k = a.key
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%o"} {
		outs = append(outs, fmt.Sprintf(verb, a), fmt.Sprintf(verb, &a))
	}
	j, _ := json.Marshal(a)
	x, _ := xml.Marshal(a)
	var g bytes.Buffer
	_ = gob.NewEncoder(&g).Encode(a)
	outs = append(outs, string(j), string(x), g.String())
	for _, out := range outs {
		for _, form := range []string{"s3cr3t", fmt.Sprintf("%x", "s3cr3t"), fmt.Sprintf("%X", "s3cr3t"), fmt.Sprintf("%d", []byte("s3cr3t")), fmt.Sprintf("%o", []byte("s3cr3t"))} {
			if strings.Contains(out, form) {
				t.Errorf("output shows the credential: %s", out)
			}
		}
	}
}
