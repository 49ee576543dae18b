package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/rail0/rail0-go/internal/strictjson"
)

// This file reads the gateway's artifacts the one way every reader reads
// them. encoding/json matches a key to a struct field ignoring case and
// Unicode folding: "meſſage" is "message", the Kelvin sign is k. It lets
// the last of two equal keys win. JSON.parse and the wallets behind
// eth_signTypedData_v4 match keys exactly. So a payload carrying an honest
// "Domain" beside a hostile "domain" is two documents. The SDK would check
// one and a wallet sign the other.
//
// So an artifact is read strictly, at every nesting level:
//   - A key that repeats is refused. So is one that equals another key of
//     its object under case folding. Package internal/strictjson does
//     this; webhook deliveries are read with it too.
//   - Every object must hold only the keys its format defines, spelled
//     exactly.

// maxArtifactDepth bounds the nesting of an artifact. The formats go four
// levels deep: types, a type, its field list, a field. Anything much
// deeper is not an artifact. Refusing it early keeps the reader's stack
// small.
const maxArtifactDepth = 16

// readArtifact reads data as one JSON object whose keys are exactly among
// known. checkKeys reads the whole of it first. readArtifact returns its
// members by key.
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
			if strictjson.FoldKey(k) == strictjson.FoldKey(want) {
				reason = fmt.Sprintf("differs from %q only by case or Unicode folding", want)
			}
		}
		return nil, &fieldError{field: strictjson.JoinKey(path, k), reason: reason}
	}
	return m, nil
}

// checkKeys refuses data as strictjson.CheckKeys does, within
// maxArtifactDepth, with the refusal as a *fieldError.
func checkKeys(data []byte) error {
	var se *strictjson.Error
	if err := strictjson.CheckKeys(data, maxArtifactDepth); errors.As(err, &se) {
		fe := &fieldError{field: se.Path, reason: se.Reason}
		if se.Path == "" {
			fe.got = Clip(string(data))
		}
		return fe
	} else if err != nil {
		return err
	}
	return nil
}
