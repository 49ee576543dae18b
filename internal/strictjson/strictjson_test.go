package strictjson_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/strictjson"
)

// TestCheckKeys: a document that encoding/json and an exact-key reader
// would read differently is refused, at every level, with the path of the
// key; one they read alike passes.
func TestCheckKeys(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, 5) + "1" + strings.Repeat("}", 5)
	for _, tt := range []struct {
		name, doc string
		path      string // "" with ok false: the document as a whole
		ok        bool
	}{
		{"plain object", `{"id":"e1","topic":"payments.created","payment":{"id":"p1"}}`, "", true},
		{"equal keys in different objects", `{"id":"e1","payment":{"id":"p1"},"transaction":{"id":"t1"}}`, "", true},
		{"array of objects with the same keys", `[{"a":1},{"a":2}]`, "", true},
		{"scalar", `"x"`, "", true},
		{"nesting at the bound", deep, "", true},
		{"repeated key", `{"topic":"a","topic":"b"}`, "topic", false},
		{"case variant", `{"topic":"a","Topic":"b"}`, "Topic", false},
		{"case variant, nested", `{"payment":{"status":"refunded","STATUS":"captured"}}`, "payment.STATUS", false},
		{"long s folds to s", `{"message":1,"meſſage":2}`, `"me\u017f\u017fage"`, false},
		{"Kelvin sign folds to k", `{"k":1,"\u212a":2}`, `"\u212a"`, false},
		{"repeat inside an array", `{"list":[{"a":1},{"a":1,"a":2}]}`, "list[1].a", false},
		{"too deep", strings.Repeat(`{"a":`, 6) + "1" + strings.Repeat("}", 6), "a.a.a.a.a", false},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", "", false},
		{"not JSON", `{"a":`, "", false},
		{"data after the value", `{"a":1} {"a":2}`, "", false},
		{"empty", ``, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := strictjson.CheckKeys([]byte(tt.doc), 5)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *strictjson.Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *strictjson.Error", err)
			}
			if se.Path != tt.path {
				t.Errorf("path %q, want %q (%v)", se.Path, tt.path, err)
			}
		})
	}
}

// TestFoldKeyIsEncodingJSONsMatching: two keys fold alike exactly when
// encoding/json would match one to a struct field named by the other, so
// CheckKeys refuses every pair that encoding/json conflates.
func TestFoldKeyIsEncodingJSONsMatching(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		field, key string
	}{
		{"message", "message"}, {"message", "Message"}, {"message", "MESSAGE"}, {"message", "meſſage"}, {"message", "meßage"},
		{"k", "\u212a"}, {"k", "K"}, {"s", "ſ"}, {"s", "ß"}, {"ss", "ß"}, {"a", "α"}, {"i", "ı"}, {"i", "İ"},
		{"domain", "dömain"}, {"domain", "domain "}, {"chainId", "chainid"}, {"chain_id", "chainId"},
	} {
		// encoding/json's own matching, through a struct with one field.
		matched := jsonMatches(tt.field, []byte(fmt.Sprintf(`{"%s": 1}`, tt.key)))
		if folded := strictjson.FoldKey(tt.field) == strictjson.FoldKey(tt.key); folded != matched {
			t.Errorf("%q against field %q: FoldKey says %v, encoding/json %v", tt.key, tt.field, folded, matched)
		}
		if strings.EqualFold(tt.field, tt.key) != matched {
			t.Errorf("%q against %q: strings.EqualFold disagrees with encoding/json", tt.key, tt.field)
		}
	}
}

// jsonMatches reports whether encoding/json stores the value of the only
// key of doc in a struct field tagged name.
func jsonMatches(name string, doc []byte) bool {
	typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[*int](), Tag: reflect.StructTag(`json:"` + name + `"`)}})
	v := reflect.New(typ)
	_ = json.Unmarshal(doc, v.Interface())
	return !v.Elem().Field(0).IsNil()
}
