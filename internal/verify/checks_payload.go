package verify

import (
	"encoding/json"
	"fmt"
	"math/big"
)

// The rows that read a signing_payload (checks.go lists them): the payer's
// TransferWithAuthorization or the payee's ReceiveWithAuthorization, each
// field recomputed from the terms and the intent. The rows run in table
// order, and a row may use what an earlier row of the payload read.

// payloadCase is a payload read strictly (doc, its top-level members) and
// what it must say. That is the primary type, the authorization's from,
// value and validBefore, and the step whose nonce it carries.
type payloadCase struct {
	t                *Terms
	in               Intent
	primary, nonceOp string
	from             Address
	value            *big.Int
	validBefore      uint64
	doc              map[string]json.RawMessage
	types            map[string]json.RawMessage
	domain, message  map[string]json.RawMessage
	pc               *Payload
}

func (c *payloadCase) refuse(field, expected, got, reason string) error {
	return &Mismatch{PaymentID: c.t.ID, Operation: c.in.Operation, Artifact: "signing_payload",
		Field: field, Expected: expected, Got: got, Reason: reason}
}

// read reads the member of raw at path with exactly the known keys.
func (c *payloadCase) read(raw json.RawMessage, path string, known ...string) (map[string]json.RawMessage, error) {
	m, err := members(raw, path, known...)
	if err != nil {
		return nil, readRefusal(err, c.t.ID, c.in.Operation, "signing_payload", "")
	}
	return m, nil
}

// payloadMode: a payer signs for an escrow or a charge, nothing else.
func payloadMode(c *payloadCase) error {
	if c.in.Operation == "" && c.t.Mode != ModeAuthorize && c.t.Mode != ModeCharge {
		return c.refuse("mode", "", "", fmt.Sprintf("%q is not a mode the payer can sign for", c.t.Mode))
	}
	return nil
}

// payloadPrimaryType: a wrong type hash yields a valid-looking signature
// that fails only on chain, so only the step's own type is signed.
func payloadPrimaryType(c *payloadCase) error {
	if got, ok := jsonString(c.doc["primaryType"]); !ok {
		return c.refuse("primaryType", "", "", "is missing or not a string")
	} else if got != c.primary {
		return c.refuse("primaryType", c.primary, Clip(got), "")
	}
	return nil
}

// payloadDomainType reads types and checks the domain's type, when given.
func payloadDomainType(c *payloadCase) error {
	var err error
	if c.types, err = c.read(c.doc["types"], "types", "EIP712Domain", c.primary); err != nil {
		return err
	}
	if _, ok := c.types["EIP712Domain"]; !ok {
		return nil
	}
	return c.typeFields("EIP712Domain", domainFields)
}

// payloadPrimaryFields checks the primary type's field list: EIP-3009's.
func payloadPrimaryFields(c *payloadCase) error {
	if _, ok := c.types[c.primary]; !ok {
		return c.refuse("types."+c.primary, "", "", "is missing")
	}
	return c.typeFields(c.primary, eip3009Typed)
}

// typeFields checks that types[name] lists exactly want.
func (c *payloadCase) typeFields(name string, want []typedField) error {
	var list []json.RawMessage
	if json.Unmarshal(c.types[name], &list) != nil {
		return c.refuse("types."+name, "", "", "is not a list of fields")
	}
	got := make([]typedField, len(list))
	for i, f := range list {
		path := fmt.Sprintf("types.%s[%d]", name, i)
		m, err := c.read(f, path, "name", "type")
		if err != nil {
			return err
		}
		var okName, okType bool
		got[i].Name, okName = jsonString(m["name"])
		got[i].Type, okType = jsonString(m["type"])
		if !okName || !okType {
			return c.refuse(path, "", "", "must hold a string name and type")
		}
	}
	if fieldList(got) != fieldList(want) {
		return c.refuse("types."+name, fieldList(want), fieldList(got), "")
	}
	return nil
}

// payloadDomain reads the domain: the token's, on the payment's chain.
func payloadDomain(c *payloadCase) error {
	var err error
	if c.domain, err = c.read(c.doc["domain"], "domain", "name", "version", "chainId", "verifyingContract"); err != nil {
		return err
	}
	if len(c.domain) != 4 {
		return c.refuse("domain", "", "", "must hold exactly name, version, chainId and verifyingContract")
	}
	return nil
}

// payloadDomainName and payloadDomainVersion read the token's EIP-712 name
// and version, which no pin states. A wrong one yields a signature the
// token refuses, so no funds move. PayerSign learns them only from a
// signature the gateway accepted (rail0.Client.learnTokenDomain).
func payloadDomainName(c *payloadCase) error {
	return c.domainString("name", &c.pc.Name)
}

func payloadDomainVersion(c *payloadCase) error {
	return c.domainString("version", &c.pc.Version)
}

func (c *payloadCase) domainString(field string, dst *string) error {
	var ok bool
	if *dst, ok = jsonString(c.domain[field]); !ok {
		return c.refuse("domain."+field, "", "", "is missing or not a string")
	}
	return nil
}

func payloadDomainChain(c *payloadCase) error {
	chainID, err := ParseUint(c.domain["chainId"], 256)
	if err != nil {
		return c.refuse("domain.chainId", "", "", err.Error())
	}
	if chainID.Cmp(c.t.ChainID) != 0 {
		return c.refuse("domain.chainId", c.t.ChainID.String(), chainID.String(), "")
	}
	return nil
}

func payloadDomainContract(c *payloadCase) error {
	var contract string
	if err := c.domainString("verifyingContract", &contract); err != nil {
		return err
	}
	verifying, err := ParseAddress(contract)
	if err != nil {
		return c.refuse("domain.verifyingContract", "", "", err.Error())
	}
	if verifying != c.t.Token {
		return c.refuse("domain.verifyingContract", c.t.Token.String(), verifying.String(), "")
	}
	return nil
}

// payloadMessage reads the message.
func payloadMessage(c *payloadCase) error {
	var err error
	if c.message, err = c.read(c.doc["message"], "message", "from", "to", "value", "validAfter", "validBefore", "nonce"); err != nil {
		return err
	}
	if len(c.message) != 6 {
		return c.refuse("message", "", "", "must hold exactly from, to, value, validAfter, validBefore and nonce")
	}
	return nil
}

func payloadFrom(c *payloadCase) error { return c.messageAddress("from", c.pc.from) }

func payloadTo(c *payloadCase) error { return c.messageAddress("to", c.pc.to) }

func (c *payloadCase) messageAddress(field string, want Address) error {
	text, ok := jsonString(c.message[field])
	if !ok {
		return c.refuse("message."+field, "", "", "is missing or not a string")
	}
	a, err := ParseAddress(text)
	if err != nil {
		return c.refuse("message."+field, "", "", err.Error())
	}
	if a != want {
		return c.refuse("message."+field, want.String(), a.String(), "")
	}
	return nil
}

func payloadValue(c *payloadCase) error { return c.messageUint("value", c.value) }

func payloadValidAfter(c *payloadCase) error { return c.messageUint("validAfter", new(big.Int)) }

func payloadValidBefore(c *payloadCase) error {
	return c.messageUint("validBefore", new(big.Int).SetUint64(c.validBefore))
}

func payloadNonce(c *payloadCase) error {
	return c.messageUint("nonce", new(big.Int).SetBytes(c.pc.nonce[:]))
}

func (c *payloadCase) messageUint(field string, want *big.Int) error {
	got, err := ParseUint(c.message[field], 256)
	if err != nil {
		return c.refuse("message."+field, "", "", err.Error())
	}
	if got.Cmp(want) != 0 {
		expected, have := want.String(), got.String()
		if field == "nonce" {
			expected, have = c.pc.nonce.String(), UintWord(got).String()
		}
		return c.refuse("message."+field, expected, have, "")
	}
	return nil
}
