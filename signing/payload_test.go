package signing

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// Pinned vectors: computed once with this package and frozen. The digest is
// also rebuilt by hand below from the EIP-3009 type hashes published in the
// USDC (FiatTokenV2) source, so the pins are not merely self-consistent.
const (
	transferDigest    = "0x72378d112393bd3e38ea599d2255e01460d2e5177e485d052a2decdd92833910"
	transferSignature = "0x36c642a3a7ed3181afa6833c0e2b95f5e752a32208b74a761d3a4e5dc59266dd5f9940a559c8bc2eefd10a1943734d07074c3b258ac1786827649ab6d0daebf51b"
	receiveDigest     = "0x34d00d6e7b21e542a6af52e4927892972d09dc0ed5c48eb5a5ff507db72bc7c7"
	receiveSignature  = "0x2d6b53be646984713e9498066ec97c95e94c3b3771e6996d06ed3adfecb238f0405910cea5643ed370e7dca1fa8df1ce48e26968b6112d51c2651be1760a6ae41b"
)

// Type hashes as published in the USDC (FiatTokenV2) contract source.
var (
	eip712DomainTypeHash = common.HexToHash("0x8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f")
	transferTypeHash     = common.HexToHash("0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267")
	receiveTypeHash      = common.HexToHash("0xd099cc98ef71107a616c4f0f941f04c322d8e254fe26b3c6668db87aae413de8")
)

func TestSignPayloadKnownAnswer(t *testing.T) {
	s := mustSigner(t, cowKey)
	payload := newPayload(t, PrimaryTypeTransfer, cowAddr).raw(t)

	p, err := ParsePayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest.Hex() != transferDigest {
		t.Errorf("digest = %s, want %s", p.Digest.Hex(), transferDigest)
	}
	sig, err := SignPayload(context.Background(), s, payload)
	if err != nil {
		t.Fatal(err)
	}
	if sig != transferSignature {
		t.Errorf("signature = %s, want %s", sig, transferSignature)
	}

	// go-ethereum's own recovery, on the raw bytes with v moved back to {0,1}.
	raw, _ := hex.DecodeString(sig[2:])
	if raw[64] != 27 && raw[64] != 28 {
		t.Fatalf("v = %d, want 27 or 28", raw[64])
	}
	raw[64] -= 27
	pub, err := crypto.SigToPub(p.Digest[:], raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := crypto.PubkeyToAddress(*pub); got != s.Address() {
		t.Errorf("SigToPub = %s, want %s", got, s.Address())
	}
	if got, err := RecoverPayloadSigner(payload, sig); err != nil || got != s.Address() {
		t.Errorf("RecoverPayloadSigner = %s, %v", got, err)
	}
	if got, err := SignPayloadForChain(context.Background(), s, payload, 84532); err != nil || got != sig {
		t.Errorf("SignPayloadForChain(84532) = %s, %v; want %s", got, err, sig)
	}
}

func TestSignPayloadReceiveWithAuthorization(t *testing.T) {
	payee := mustSigner(t, hardhatKey)
	payload := newPayload(t, PrimaryTypeReceive, hardhatAddr).raw(t)
	p, err := ParsePayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	if p.PrimaryType != PrimaryTypeReceive || p.Digest.Hex() != receiveDigest {
		t.Errorf("ParsePayload = %s %s, want %s", p.PrimaryType, p.Digest.Hex(), receiveDigest)
	}
	if p.Digest == common.HexToHash(transferDigest) {
		t.Fatal("Receive and Transfer must hash differently")
	}
	sig, err := SignPayload(context.Background(), payee, payload)
	if err != nil {
		t.Fatal(err)
	}
	if sig != receiveSignature {
		t.Errorf("signature = %s, want %s", sig, receiveSignature)
	}
	if got, _ := RecoverPayloadSigner(payload, sig); got != payee.Address() {
		t.Errorf("recovered %s, want %s", got, payee.Address())
	}
}

// TestPayloadDigestMatchesHandBuiltEIP712 rebuilds the digest without apitypes,
// from the published type hashes, to cross-check the pinned values.
func TestPayloadDigestMatchesHandBuiltEIP712(t *testing.T) {
	word := func(n int64) []byte { return common.BigToHash(big.NewInt(n)).Bytes() }
	addr := func(a string) []byte { return common.LeftPadBytes(common.HexToAddress(a).Bytes(), 32) }
	domainSep := crypto.Keccak256(
		eip712DomainTypeHash[:],
		crypto.Keccak256([]byte("USDC")),
		crypto.Keccak256([]byte("2")),
		word(84532),
		addr(usdcBaseSepolia),
	)
	for _, tc := range []struct {
		primary  string
		typeHash common.Hash
		from     string
		want     string
	}{
		{PrimaryTypeTransfer, transferTypeHash, cowAddr, transferDigest},
		{PrimaryTypeReceive, receiveTypeHash, hardhatAddr, receiveDigest},
	} {
		structHash := crypto.Keccak256(
			tc.typeHash[:], addr(tc.from), addr(rail0Contract),
			word(25000000), word(0), word(1789985700), common.HexToHash(paymentNonce).Bytes(),
		)
		want := crypto.Keccak256Hash([]byte{0x19, 0x01}, domainSep, structHash)
		if want.Hex() != tc.want {
			t.Errorf("%s: hand-built digest %s, pinned %s", tc.primary, want.Hex(), tc.want)
		}
		p, err := ParsePayload(newPayload(t, tc.primary, tc.from).raw(t))
		if err != nil {
			t.Fatal(err)
		}
		if p.Digest != want {
			t.Errorf("%s: ParsePayload digest %s, hand-built %s", tc.primary, p.Digest.Hex(), want.Hex())
		}
	}
	td := apitypes.TypedData{Types: apitypes.Types{PrimaryTypeTransfer: authorizationFields, PrimaryTypeReceive: authorizationFields, eip712Domain: domainFields}}
	if got := common.BytesToHash(td.TypeHash(PrimaryTypeTransfer)); got != transferTypeHash {
		t.Errorf("TransferWithAuthorization type hash %s, want %s", got, transferTypeHash)
	}
	if got := common.BytesToHash(td.TypeHash(PrimaryTypeReceive)); got != receiveTypeHash {
		t.Errorf("ReceiveWithAuthorization type hash %s, want %s", got, receiveTypeHash)
	}
	if got := common.BytesToHash(td.TypeHash(eip712Domain)); got != eip712DomainTypeHash {
		t.Errorf("EIP712Domain type hash %s, want %s", got, eip712DomainTypeHash)
	}
}

// TestEIP712SpecMailExample signs the example of the EIP-712 specification
// (https://eips.ethereum.org/EIPS/eip-712) through the same path SignPayload
// uses, and compares with the signature published there.
func TestEIP712SpecMailExample(t *testing.T) {
	const mail = `{
		"types": {
			"EIP712Domain": [{"name":"name","type":"string"},{"name":"version","type":"string"},{"name":"chainId","type":"uint256"},{"name":"verifyingContract","type":"address"}],
			"Person": [{"name":"name","type":"string"},{"name":"wallet","type":"address"}],
			"Mail": [{"name":"from","type":"Person"},{"name":"to","type":"Person"},{"name":"contents","type":"string"}]
		},
		"primaryType": "Mail",
		"domain": {"name":"Ether Mail","version":"1","chainId":1,"verifyingContract":"0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"},
		"message": {
			"from": {"name":"Cow","wallet":"0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
			"to": {"name":"Bob","wallet":"0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
			"contents": "Hello, Bob!"
		}
	}`
	var td apitypes.TypedData
	if err := json.Unmarshal([]byte(mail), &td); err != nil {
		t.Fatal(err)
	}
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		t.Fatal(err)
	}
	if got := common.BytesToHash(digest).Hex(); got != "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2" {
		t.Fatalf("Mail digest = %s", got)
	}
	sig, err := signDigest(context.Background(), mustSigner(t, cowKey), common.BytesToHash(digest))
	if err != nil {
		t.Fatal(err)
	}
	const (
		wantR = "4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d"
		wantS = "07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b91562"
	)
	if got := encodeSignature(sig); got != "0x"+wantR+wantS+"1c" {
		t.Fatalf("Mail signature = %s, want r=%s s=%s v=28", got, wantR, wantS)
	}
	// And SignPayload itself refuses the Mail type rather than signing it.
	if _, err := SignPayload(context.Background(), mustSigner(t, cowKey), json.RawMessage(mail)); !errors.Is(err, ErrUnknownPrimaryType) {
		t.Fatalf("SignPayload(Mail) = %v, want ErrUnknownPrimaryType", err)
	}
}

func TestParsePayloadAcceptsEquivalentEncodings(t *testing.T) {
	for name, mutate := range map[string]func(payloadDoc){
		"EIP712Domain omitted":      func(p payloadDoc) { delete(p.types(), eip712Domain) },
		"chainId decimal string":    func(p payloadDoc) { p.domain()["chainId"] = "84532" },
		"chainId hex string":        func(p payloadDoc) { p.domain()["chainId"] = "0x14a34" },
		"from in lower case":        func(p payloadDoc) { p.message()["from"] = strings.ToLower(cowAddr) },
		"value as JSON number":      func(p payloadDoc) { p.message()["value"] = json.Number("25000000") },
		"value as hex string":       func(p payloadDoc) { p.message()["value"] = "0x17d7840" },
		"validBefore as string":     func(p payloadDoc) { p.message()["validBefore"] = "1789985700" },
		"unknown top-level key":     func(p payloadDoc) { p["extra"] = true },
		"unreferenced type present": func(p payloadDoc) { p.types()["Other"] = []any{map[string]any{"name": "x", "type": "uint8"}} },
	} {
		t.Run(name, func(t *testing.T) {
			doc := newPayload(t, PrimaryTypeTransfer, cowAddr)
			mutate(doc)
			p, err := ParsePayload(doc.raw(t))
			if err != nil {
				t.Fatal(err)
			}
			if p.Digest.Hex() != transferDigest {
				t.Fatalf("digest = %s, want %s", p.Digest.Hex(), transferDigest)
			}
		})
	}
}

// TestParsePayloadKeepsLargeJSONNumbersExact guards against decoding integers
// through float64, which rounds values above 2^53 and would sign a different
// amount than the gateway hashes.
func TestParsePayloadKeepsLargeJSONNumbersExact(t *testing.T) {
	const big = "9007199254740993" // 2^53 + 1, not representable as float64
	asNumber := newPayload(t, PrimaryTypeTransfer, cowAddr)
	asNumber.message()["value"] = json.Number(big)
	asString := newPayload(t, PrimaryTypeTransfer, cowAddr)
	asString.message()["value"] = big
	rounded := newPayload(t, PrimaryTypeTransfer, cowAddr)
	rounded.message()["value"] = "9007199254740992"

	pn, err := ParsePayload(asNumber.raw(t))
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := ParsePayload(asString.raw(t))
	pr, _ := ParsePayload(rounded.raw(t))
	if pn.Value.String() != big || pn.Digest != ps.Digest || pn.Digest == pr.Digest {
		t.Fatalf("value %s digest %s; string form %s; rounded %s", pn.Value, pn.Digest, ps.Digest, pr.Digest)
	}
}

func TestParsePayloadFields(t *testing.T) {
	p, err := ParsePayload(newPayload(t, PrimaryTypeTransfer, cowAddr).raw(t))
	if err != nil {
		t.Fatal(err)
	}
	if p.Domain.Name != "USDC" || p.Domain.Version != "2" || p.Domain.ChainID.Int64() != 84532 ||
		p.Domain.VerifyingContract != common.HexToAddress(usdcBaseSepolia) ||
		p.From != common.HexToAddress(cowAddr) || p.To != common.HexToAddress(rail0Contract) ||
		p.Value.Int64() != 25000000 || p.ValidAfter.Sign() != 0 || p.ValidBefore.Int64() != 1789985700 ||
		p.Nonce != common.HexToHash(paymentNonce) {
		t.Fatalf("ParsePayload = %+v", p)
	}
	const want = `TransferWithAuthorization{chain 84532, token 0x036CbD53842c5426634e7929541eC2318f3dCF7e ("USDC" v2), from 0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826, to 0x7C1E3b52fa9d4C26E0a1F83B5D9E6a4c2b0f8e31, value 25000000, valid 0..1789985700}`
	if p.String() != want {
		t.Errorf("String() = %s", p.String())
	}
}

func TestSignPayloadRefusals(t *testing.T) {
	type mutation func(payloadDoc)
	setDomain := func(k string, v any) mutation { return func(p payloadDoc) { p.domain()[k] = v } }
	delDomain := func(k string) mutation { return func(p payloadDoc) { delete(p.domain(), k) } }
	setMsg := func(k string, v any) mutation { return func(p payloadDoc) { p.message()[k] = v } }
	delMsg := func(k string) mutation { return func(p payloadDoc) { delete(p.message(), k) } }
	setField := func(i int, typ string) mutation {
		return func(p payloadDoc) {
			fields := p.types()[PrimaryTypeTransfer].([]any)
			fields[i].(map[string]any)["type"] = typ
		}
	}
	appendType := func(typ, name, solType string) mutation {
		return func(p payloadDoc) {
			p.types()[typ] = append(p.types()[typ].([]any), map[string]any{"name": name, "type": solType})
		}
	}
	for name, tc := range map[string]struct {
		mutate mutation
		want   error
	}{
		"primaryType Mail":             {func(p payloadDoc) { p["primaryType"] = "Mail" }, ErrUnknownPrimaryType},
		"primaryType Permit":           {func(p payloadDoc) { p["primaryType"] = "Permit" }, ErrUnknownPrimaryType},
		"primaryType lower case":       {func(p payloadDoc) { p["primaryType"] = "transferWithAuthorization" }, ErrUnknownPrimaryType},
		"primaryType missing":          {func(p payloadDoc) { delete(p, "primaryType") }, ErrUnknownPrimaryType},
		"primaryType not a string":     {func(p payloadDoc) { p["primaryType"] = 7 }, ErrUnknownPrimaryType},
		"unknown type checked first":   {func(p payloadDoc) { p["primaryType"] = "Permit"; delete(p, "domain"); delete(p, "types") }, ErrUnknownPrimaryType},
		"types missing":                {func(p payloadDoc) { delete(p, "types") }, ErrUnexpectedTypes},
		"types not an object":          {func(p payloadDoc) { p["types"] = "x" }, ErrUnexpectedTypes},
		"primary type not defined":     {func(p payloadDoc) { delete(p.types(), PrimaryTypeTransfer) }, ErrUnexpectedTypes},
		"value declared uint128":       {setField(2, "uint128"), ErrUnexpectedTypes},
		"nonce declared uint256":       {setField(5, "uint256"), ErrUnexpectedTypes},
		"fields reordered":             {func(p payloadDoc) { f := p.types()[PrimaryTypeTransfer].([]any); f[0], f[1] = f[1], f[0] }, ErrUnexpectedTypes},
		"extra field declared":         {appendType(PrimaryTypeTransfer, "memo", "string"), ErrUnexpectedTypes},
		"EIP712Domain with salt":       {appendType(eip712Domain, "salt", "bytes32"), ErrUnexpectedTypes},
		"EIP712Domain without version": {func(p payloadDoc) { p.types()[eip712Domain] = p.types()[eip712Domain].([]any)[0:1] }, ErrUnexpectedTypes},
		"domain missing":               {func(p payloadDoc) { delete(p, "domain") }, ErrInvalidDomain},
		"domain null":                  {func(p payloadDoc) { p["domain"] = nil }, ErrInvalidDomain},
		"domain not an object":         {func(p payloadDoc) { p["domain"] = []any{} }, ErrInvalidDomain},
		"domain name missing":          {delDomain("name"), ErrInvalidDomain},
		"domain name empty":            {setDomain("name", ""), ErrInvalidDomain},
		"domain version missing":       {delDomain("version"), ErrInvalidDomain},
		"domain version number":        {setDomain("version", 2), ErrInvalidDomain},
		"domain chainId missing":       {delDomain("chainId"), ErrInvalidDomain},
		"domain chainId zero":          {setDomain("chainId", 0), ErrInvalidDomain},
		"domain chainId negative":      {setDomain("chainId", -1), ErrInvalidDomain},
		"domain chainId fraction":      {setDomain("chainId", 1.5), ErrInvalidDomain},
		"domain chainId empty string":  {setDomain("chainId", ""), ErrInvalidDomain},
		"domain chainId 2^256":         {setDomain("chainId", "0x1"+strings.Repeat("0", 64)), ErrInvalidDomain},
		"domain contract missing":      {delDomain("verifyingContract"), ErrInvalidDomain},
		"domain contract short":        {setDomain("verifyingContract", "0x036CbD53842c5426634e"), ErrInvalidDomain},
		"domain contract without 0x":   {setDomain("verifyingContract", usdcBaseSepolia[2:]), ErrInvalidDomain},
		"domain salt":                  {setDomain("salt", paymentNonce), ErrInvalidDomain},
		"message missing":              {func(p payloadDoc) { delete(p, "message") }, ErrInvalidMessage},
		"message not an object":        {func(p payloadDoc) { p["message"] = 1 }, ErrInvalidMessage},
		"message from missing":         {delMsg("from"), ErrInvalidMessage},
		"message nonce missing":        {delMsg("nonce"), ErrInvalidMessage},
		"message extra field":          {setMsg("memo", "hi"), ErrInvalidMessage},
		"message from malformed":       {setMsg("from", "0xCD2a3d9F"), ErrInvalidMessage},
		"message to null":              {setMsg("to", nil), ErrInvalidMessage},
		"message value negative":       {setMsg("value", "-1"), ErrInvalidMessage},
		"message value fraction":       {setMsg("value", json.Number("25.5")), ErrInvalidMessage},
		"message value empty":          {setMsg("value", ""), ErrInvalidMessage},
		"message value overflow":       {setMsg("value", "0x1"+strings.Repeat("0", 64)), ErrInvalidMessage},
		"message validBefore bool":     {setMsg("validBefore", true), ErrInvalidMessage},
		"message nonce short":          {setMsg("nonce", "0x9f2c"), ErrInvalidMessage},
		"message nonce not hex":        {setMsg("nonce", "0x"+strings.Repeat("zz", 32)), ErrInvalidMessage},
		"message from other key":       {setMsg("from", hardhatAddr), ErrSignerMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			doc := newPayload(t, PrimaryTypeTransfer, cowAddr)
			tc.mutate(doc)
			cs := &countingSigner{Signer: mustSigner(t, cowKey)}
			sig, err := SignPayload(context.Background(), cs, doc.raw(t))
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalidPayload) {
				t.Fatalf("SignPayload = %q, %v; want %v", sig, err, tc.want)
			}
			var pe *PayloadError
			if !errors.As(err, &pe) || pe.Reason == "" || !strings.Contains(err.Error(), pe.Reason) {
				t.Fatalf("error %v is not a *PayloadError with a reason", err)
			}
			t.Log(err)
			if sig != "" || cs.calls.Load() != 0 {
				t.Fatalf("refused payload reached the signer %d times", cs.calls.Load())
			}
		})
	}
}

func TestSignPayloadForChainMismatch(t *testing.T) {
	cs := &countingSigner{Signer: mustSigner(t, cowKey)}
	payload := newPayload(t, PrimaryTypeTransfer, cowAddr).raw(t)
	for _, chain := range []int64{8453, 1, 0, -84532} {
		_, err := SignPayloadForChain(context.Background(), cs, payload, chain)
		if !errors.Is(err, ErrChainMismatch) {
			t.Errorf("chain %d: err = %v, want ErrChainMismatch", chain, err)
		}
	}
	if cs.calls.Load() != 0 {
		t.Fatalf("signer called %d times", cs.calls.Load())
	}
	_, err := SignPayloadForChain(context.Background(), cs, payload, 8453)
	if want := "signing: signing payload refused: domain.chainId is 84532, want 8453"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
}

func TestSignPayloadSignerMismatchMessage(t *testing.T) {
	payload := newPayload(t, PrimaryTypeTransfer, cowAddr).raw(t)
	_, err := SignPayload(context.Background(), mustSigner(t, hardhatKey), payload)
	want := "signing: signing payload refused: message.from is " + cowAddr + " but the signer is " + hardhatAddr
	if !errors.Is(err, ErrSignerMismatch) || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func TestParsePayloadRejectsNonJSON(t *testing.T) {
	for _, in := range []string{"", "not json", "[]", `{"primaryType":`} {
		if _, err := ParsePayload(json.RawMessage(in)); !errors.Is(err, ErrInvalidPayload) {
			t.Errorf("ParsePayload(%q) = %v", in, err)
		}
	}
}

func TestRecoverPayloadSigner(t *testing.T) {
	payload := newPayload(t, PrimaryTypeTransfer, cowAddr).raw(t)
	v01 := transferSignature[:130] + "00" // v=27 written as recovery id 0
	if transferSignature[130:] != "1b" {
		t.Fatalf("pinned signature has v=%s; adjust the test", transferSignature[130:])
	}
	for _, sig := range []string{transferSignature, v01} {
		if got, err := RecoverPayloadSigner(payload, sig); err != nil || got.Hex() != cowAddr {
			t.Errorf("RecoverPayloadSigner(%s) = %s, %v", sig, got, err)
		}
	}
	// A signature over another payload recovers to some other address.
	other := newPayload(t, PrimaryTypeTransfer, cowAddr)
	other.message()["value"] = "25000001"
	if got, err := RecoverPayloadSigner(other.raw(t), transferSignature); err == nil && got.Hex() == cowAddr {
		t.Error("a signature must not verify for a different amount")
	}
	for _, bad := range []string{
		"", "0x", transferSignature[2:], transferSignature[:128], transferSignature + "00",
		transferSignature[:130] + "1d", "0x" + strings.Repeat("0", 130), "0x" + strings.Repeat("g", 130),
	} {
		if _, err := RecoverPayloadSigner(payload, bad); !errors.Is(err, ErrInvalidSignature) {
			t.Errorf("RecoverPayloadSigner(%q) = %v, want ErrInvalidSignature", bad, err)
		}
	}
	mail := newPayload(t, PrimaryTypeTransfer, cowAddr)
	mail["primaryType"] = "Mail"
	if _, err := RecoverPayloadSigner(mail.raw(t), transferSignature); !errors.Is(err, ErrUnknownPrimaryType) {
		t.Errorf("RecoverPayloadSigner(Mail) = %v", err)
	}
}

func TestPayloadMarshalJSONRoundTrip(t *testing.T) {
	p, err := ParsePayload(newPayload(t, PrimaryTypeTransfer, cowAddr).raw(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParsePayload(b)
	if err != nil {
		t.Fatalf("ParsePayload(%s): %v", b, err)
	}
	if back.Digest.Hex() != transferDigest || back.String() != p.String() {
		t.Fatalf("round trip gives %s (%s), want %s", back.Digest.Hex(), back, transferDigest)
	}

	// A fake server can build a payload from fields alone.
	built := &Payload{
		PrimaryType: PrimaryTypeReceive,
		Domain:      PayloadDomain{Name: "USDC", Version: "2", ChainID: big.NewInt(84532), VerifyingContract: common.HexToAddress(usdcBaseSepolia)},
		From:        common.HexToAddress(hardhatAddr), To: common.HexToAddress(rail0Contract),
		Value: big.NewInt(25000000), ValidAfter: new(big.Int), ValidBefore: big.NewInt(1789985700),
		Nonce: common.HexToHash(paymentNonce),
	}
	b, err = json.Marshal(built)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ParsePayload(b); err != nil || got.Digest.Hex() != receiveDigest {
		t.Fatalf("built payload: %v, %v; want digest %s", got, err, receiveDigest)
	}

	built.PrimaryType = "Permit"
	if _, err := json.Marshal(built); !errors.Is(err, ErrUnknownPrimaryType) {
		t.Errorf("Marshal(Permit) = %v", err)
	}
	if _, err := json.Marshal(&Payload{PrimaryType: PrimaryTypeTransfer}); err == nil {
		t.Error("Marshal of a payload without numbers must fail")
	}
}
