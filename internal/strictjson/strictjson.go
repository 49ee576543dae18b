// Package strictjson reads a JSON document the one way every reader reads
// it.
//
// encoding/json matches a key to a struct field ignoring case and Unicode
// folding: "meſſage" is "message", the Kelvin sign is k. It also lets the
// last of two equal keys win. JSON.parse, Python's json and the wallets
// behind eth_signTypedData_v4 match keys exactly. Some of them keep the
// first of two. So a document can be two documents. Take an honest
// "Domain" beside a hostile "domain", or a webhook event with "topic"
// beside "Topic". The SDK would act on one and another reader on the
// other. CheckKeys refuses such a document before anything decodes it.
//
// It serves both places where the SDK reads what another party signs or
// will sign. These are the gateway's artifacts (package internal/verify)
// and webhook deliveries (package webhook). It uses the standard library's
// token stream only.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Error is a document CheckKeys refuses.
// Path names the offending key in dotted form, each key shown by KeyText.
// Examples are "message.value" and "types.EIP712Domain[0].name".
// Path is empty when the document as a whole is refused. That happens for
// invalid UTF-8, invalid JSON, or data after its value.
type Error struct {
	Path   string
	Reason string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "the document " + e.Reason
	}
	return e.Path + " " + e.Reason
}

// CheckKeys reads data token by token and refuses what two readers could
// read two ways. Data must be exactly one JSON value in valid UTF-8.
// At every nesting level it refuses a key that appears twice in one object.
// It also refuses a key equal to another of its object under Unicode case
// folding, since encoding/json matches keys that way. And it refuses a
// value nested more than maxDepth objects or arrays deep. The refusal is an
// *Error.
func CheckKeys(data []byte, maxDepth int) error {
	if !utf8.Valid(data) {
		return &Error{Reason: "is not valid UTF-8"}
	}
	type level struct {
		path   string
		object bool
		keys   map[string]string // folded key → the key as written
		key    string            // the key whose value comes next; "" when a key comes next
		index  int               // the next element of an array
	}
	var stack []*level
	// done moves the innermost level past the value just read.
	done := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.key = ""
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	values := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return &Error{Reason: "is not valid JSON"}
		}
		if len(stack) == 0 {
			if values++; values > 1 {
				return &Error{Reason: "has data after its JSON value"}
			}
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key == "" {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				done()
				continue
			}
			k, _ := tok.(string) // the decoder has checked that a key is a string
			if prev, seen := top.keys[FoldKey(k)]; seen {
				reason := "is repeated"
				if prev != k {
					reason = fmt.Sprintf("and %s differ only by case or Unicode folding", KeyText(prev))
				}
				return &Error{Path: JoinKey(top.path, k), Reason: reason}
			}
			top.keys[FoldKey(k)], top.key = k, k
			continue
		}
		path := ""
		switch {
		case top != nil && top.object:
			path = JoinKey(top.path, top.key)
		case top != nil:
			path = top.path + "[" + strconv.Itoa(top.index) + "]"
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxDepth {
				return &Error{Path: path, Reason: fmt.Sprintf("is nested more than %d levels deep", maxDepth)}
			}
			stack = append(stack, &level{path: path, object: tok == json.Delim('{'), keys: map[string]string{}})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			done()
		}
	}
	if values == 0 || len(stack) > 0 {
		return &Error{Reason: "is not valid JSON"}
	}
	return nil
}

// FoldKey maps a key to a representative of its class under Unicode simple
// case folding. Two keys fold alike exactly when strings.EqualFold holds.
// That is when encoding/json takes one for the other.
func FoldKey(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		out = append(out, least)
	}
	return string(out)
}

// JoinKey appends key, shown by KeyText, to path, the dotted path of an
// object.
func JoinKey(path, key string) string {
	if path == "" {
		return KeyText(key)
	}
	return path + "." + KeyText(key)
}

// maxKeyText bounds how much of a key an error shows.
const maxKeyText = 80

// KeyText shows a key in an error.
// A plain name is shown as it is. Any other key is quoted in ASCII, at most
// its first 80 bytes. So a folded letter (ſ, the Kelvin sign) cannot pass
// for another key. Nor can a control character or an invisible one, and
// neither reaches a terminal raw.
func KeyText(k string) string {
	plain := k != "" && len(k) <= 64
	for i := 0; plain && i < len(k); i++ {
		c := k[i]
		plain = c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	if plain {
		return k
	}
	if len(k) > maxKeyText {
		k = k[:maxKeyText] + "…"
	}
	return strconv.QuoteToASCII(k)
}
