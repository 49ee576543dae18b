package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// This file reads the gateway's artifacts the one way every reader reads
// them. encoding/json matches a key to a struct field ignoring case and
// Unicode folding ("meſſage" is "message", the Kelvin sign is k) and lets
// the last of two equal keys win, while JSON.parse and the wallets behind
// eth_signTypedData_v4 match keys exactly. A payload carrying an honest
// "Domain" beside a hostile "domain" is two documents: the SDK would check
// one and a wallet sign the other. So an artifact is read strictly, with
// the standard library's token stream: at every nesting level a key that
// repeats, or that equals another key of its object under case folding, is
// refused, and every object must hold only the keys its format defines,
// spelled exactly.

// maxArtifactDepth bounds the nesting of an artifact. The formats go four
// levels deep (types, a type, its field list, a field); anything much
// deeper is not an artifact, and refusing it early keeps the reader's
// stack small.
const maxArtifactDepth = 16

// readArtifact reads data as one JSON object whose keys are exactly among
// known, after checkKeys has read the whole of it, and returns its members
// by key.
func readArtifact(data []byte, known ...string) (map[string]json.RawMessage, error) {
	if err := checkKeys(data); err != nil {
		return nil, err
	}
	return members(data, "", known...)
}

// members returns the members of raw, a JSON object at path whose keys
// must all be among known, spelled exactly. A key that differs from a
// known one only by case or folding is named as such. raw must already
// have passed checkKeys (as part of its artifact), so no key repeats.
func members(raw json.RawMessage, path string, known ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, &fieldError{field: path, got: Clip(string(raw)), reason: "is not a JSON object"}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first unknown key in a stable order
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		reason := "is not a key of this object"
		for _, want := range known {
			if foldKey(k) == foldKey(want) {
				reason = fmt.Sprintf("differs from %q only by case or Unicode folding", want)
			}
		}
		return nil, &fieldError{field: joinKey(path, k), reason: reason}
	}
	return m, nil
}

// checkKeys reads data, which must be exactly one JSON value in valid
// UTF-8, token by token, and refuses at every nesting level a key that
// appears twice in one object or that equals another key of its object
// under Unicode case folding, the equivalence encoding/json matches keys
// with.
func checkKeys(data []byte) error {
	if !utf8.Valid(data) {
		return &fieldError{reason: "is not valid UTF-8"}
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
			return &fieldError{got: Clip(string(data)), reason: "is not valid JSON"}
		}
		if len(stack) == 0 {
			if values++; values > 1 {
				return &fieldError{got: Clip(string(data)), reason: "has data after its JSON value"}
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
			if prev, seen := top.keys[foldKey(k)]; seen {
				reason := "is repeated"
				if prev != k {
					reason = fmt.Sprintf("and %s differ only by case or Unicode folding", keyText(prev))
				}
				return &fieldError{field: joinKey(top.path, k), reason: reason}
			}
			top.keys[foldKey(k)], top.key = k, k
			continue
		}
		path := ""
		switch {
		case top != nil && top.object:
			path = joinKey(top.path, top.key)
		case top != nil:
			path = top.path + "[" + strconv.Itoa(top.index) + "]"
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxArtifactDepth {
				return &fieldError{field: path, reason: fmt.Sprintf("is nested more than %d levels deep", maxArtifactDepth)}
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
		return &fieldError{got: Clip(string(data)), reason: "is not valid JSON"}
	}
	return nil
}

// foldKey maps a key to a representative of its class under Unicode simple
// case folding: two keys fold alike exactly when strings.EqualFold holds,
// which is when encoding/json takes one for the other.
func foldKey(s string) string {
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

// joinKey appends key to path, the dotted path of an object.
func joinKey(path, key string) string {
	if path == "" {
		return keyText(key)
	}
	return path + "." + keyText(key)
}

// keyText shows a key in an error: as it is when it is a plain name, else
// quoted in ASCII, so that a folded letter (ſ, the Kelvin sign), a control
// character or an invisible one cannot pass for another key or reach a
// terminal raw.
func keyText(k string) string {
	plain := k != "" && len(k) <= 64
	for i := 0; plain && i < len(k); i++ {
		c := k[i]
		plain = c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	if plain {
		return k
	}
	return strconv.QuoteToASCII(Clip(k))
}
