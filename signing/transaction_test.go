package signing

import (
	"context"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// readmeUnsignedTx is the capture prepared in the README's section 13 example.
const readmeUnsignedTx = `{"chain_id":84532,"nonce":7,"to":"0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31","value":"0","data":"0xa0e7c9f49f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f0000000000000000000000000000000000000000000000000000000000e4e1c0","gas_limit":120000,"max_priority_fee_per_gas":"1000000","max_fee_per_gas":"1500000000"}`

// Pinned: readmeUnsignedTx signed with cowKey, computed once and frozen, and
// cross-checked below against go-ethereum's own types.SignTx.
const (
	readmeSignedTx = "0x02f8b283014a3407830f42408459682f008301d4c0947c1e3b52fa9d4c26e0a1f83b5d9e6a4c2b0f8e3180b844a0e7c9f49f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f0000000000000000000000000000000000000000000000000000000000e4e1c0c080a0d674b818cdfc82c5f96732187eebd1dc615467cb212b00b6c5896aad66ce7b84a03a12b9dba9cbffe7c1392c057e9b8036653c4b890fe5fed4f03b05a741728f85"
	readmeTxHash   = "0x75f9ae3598d379faaab1b0f4c230f15f9128d3c5b89aa5f6275ef0015832d921"
	readmeSigHash  = "0x826b23397717dbb10526dbe85e994094f630b3ebc5ac8a3f29323b37f730b662"
)

func TestSignTransactionKnownAnswer(t *testing.T) {
	s := mustSigner(t, cowKey)
	raw, err := SignTransaction(context.Background(), s, readmeUnsignedTx)
	if err != nil {
		t.Fatal(err)
	}
	if raw != readmeSignedTx {
		t.Errorf("SignTransaction =\n%s\nwant\n%s", raw, readmeSignedTx)
	}
	if !strings.HasPrefix(raw, "0x02") {
		t.Errorf("raw transaction %s does not start with 0x02", raw[:6])
	}

	var tx types.Transaction
	if err := tx.UnmarshalBinary(hexutil.MustDecode(raw)); err != nil {
		t.Fatal(err)
	}
	if tx.Hash().Hex() != readmeTxHash {
		t.Errorf("tx hash = %s, want %s", tx.Hash().Hex(), readmeTxHash)
	}
	u, err := ParseUnsignedTransaction(readmeUnsignedTx)
	if err != nil {
		t.Fatal(err)
	}
	if u.SigningHash().Hex() != readmeSigHash {
		t.Errorf("signing hash = %s, want %s", u.SigningHash().Hex(), readmeSigHash)
	}
	if h := types.NewLondonSigner(u.ChainID).Hash(u.Transaction()); h != u.SigningHash() {
		t.Errorf("go-ethereum's signing hash %s differs from SigningHash %s", h.Hex(), u.SigningHash().Hex())
	}
	wantData := hexutil.MustDecode("0xa0e7c9f49f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f0000000000000000000000000000000000000000000000000000000000e4e1c0")
	if tx.Type() != types.DynamicFeeTxType || tx.ChainId().Int64() != 84532 || tx.Nonce() != 7 ||
		*tx.To() != common.HexToAddress(rail0Contract) || tx.Value().Sign() != 0 ||
		!reflect.DeepEqual(tx.Data(), wantData) || tx.Gas() != 120000 ||
		tx.GasTipCap().Int64() != 1000000 || tx.GasFeeCap().Int64() != 1500000000 || len(tx.AccessList()) != 0 {
		t.Errorf("decoded transaction does not carry the JSON fields: %+v", &tx)
	}
	from, err := types.Sender(types.NewLondonSigner(big.NewInt(84532)), &tx)
	if err != nil || from != s.Address() {
		t.Errorf("types.Sender = %s, %v; want %s", from, err, s.Address())
	}
	if got, err := RecoverTransactionSender(raw); err != nil || got != s.Address() {
		t.Errorf("RecoverTransactionSender = %s, %v", got, err)
	}

	// Independent path: go-ethereum signs the same fields with the raw key.
	ref, err := types.SignTx(u.Transaction(), types.NewLondonSigner(u.ChainID), s.key)
	if err != nil {
		t.Fatal(err)
	}
	refRaw, _ := ref.MarshalBinary()
	if hexutil.Encode(refRaw) != raw {
		t.Errorf("types.SignTx gives %x", refRaw)
	}
}

// TestSignDigestMatchesEIP155Example signs the example transaction of the
// EIP-155 specification (https://eips.ethereum.org/EIPS/eip-155) through the
// Signer path and compares with the raw transaction published there.
func TestSignDigestMatchesEIP155Example(t *testing.T) {
	s := mustSigner(t, eip155Key)
	to := common.HexToAddress("0x3535353535353535353535353535353535353535")
	tx := types.NewTx(&types.LegacyTx{
		Nonce: 9, GasPrice: big.NewInt(20_000_000_000), Gas: 21000, To: &to,
		Value: new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil),
	})
	signer := types.NewEIP155Signer(big.NewInt(1))
	h := signer.Hash(tx)
	if h.Hex() != "0xdaf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53" {
		t.Fatalf("signing hash = %s", h.Hex())
	}
	sig, err := signDigest(context.Background(), s, h)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := tx.WithSignature(signer, sig)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := rlp.EncodeToBytes(signed)
	const want = "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83"
	if hexutil.Encode(raw) != want {
		t.Fatalf("EIP-155 example =\n%x\nwant\n%s", raw, want)
	}
	if _, err := RecoverTransactionSender(want); !errors.Is(err, ErrInvalidTransaction) {
		t.Errorf("RecoverTransactionSender(legacy) = %v, want ErrInvalidTransaction", err)
	}
}

func TestSignTransactionFrom(t *testing.T) {
	s := mustSigner(t, cowKey)
	withFrom := strings.TrimSuffix(readmeUnsignedTx, "}") + `,"from":"` + strings.ToLower(cowAddr) + `"}`
	raw, err := SignTransaction(context.Background(), s, withFrom)
	if err != nil || raw != readmeSignedTx {
		t.Fatalf("matching from: %s, %v", raw, err)
	}
	withNull := strings.TrimSuffix(readmeUnsignedTx, "}") + `,"from":null}`
	if raw, err := SignTransaction(context.Background(), s, withNull); err != nil || raw != readmeSignedTx {
		t.Fatalf("null from: %s, %v", raw, err)
	}

	cs := &countingSigner{Signer: mustSigner(t, hardhatKey)}
	_, err = SignTransaction(context.Background(), cs, withFrom)
	var te *TransactionError
	if !errors.Is(err, ErrSignerMismatch) || !errors.Is(err, ErrInvalidTransaction) || !errors.As(err, &te) || te.Field != "from" {
		t.Fatalf("other signer: err = %v, want a from field error matching ErrSignerMismatch", err)
	}
	want := `signing: invalid transaction: field "from": signer mismatch: the transaction is from ` + cowAddr + ` but the signer is ` + hardhatAddr
	if err.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", err, want)
	}
	if cs.calls.Load() != 0 {
		t.Fatal("a refused transaction reached the signer")
	}
}

func TestParseUnsignedTransactionNumberForms(t *testing.T) {
	want, err := ParseUnsignedTransaction(readmeUnsignedTx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		`{"chain_id":"84532","nonce":"7","to":"0x7c1e3b52fa9d4c26e0a1f83b5d9e6a4c2b0f8e31","value":0,"data":"0xA0E7C9F49F2C4E1A7B3D5C8E0F6A2B4D6C8E0A1B3C5D7E9F0A2B4C6D8E0F1A3B5C7D9E2F0000000000000000000000000000000000000000000000000000000000E4E1C0","gas_limit":"120000","max_priority_fee_per_gas":1000000,"max_fee_per_gas":1500000000}`,
		`{"max_fee_per_gas":"0x59682f00","max_priority_fee_per_gas":"0xf4240","gas_limit":"0x1d4c0","data":"0xa0e7c9f49f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f0000000000000000000000000000000000000000000000000000000000e4e1c0","value":"0x0","to":"0x7C1E3b52fa9d4C26E0a1F83B5D9E6a4c2b0f8e31","nonce":"0x07","chain_id":"0x14a34","future_field":{"x":[1,2]}}`,
		" \n" + `{"chain_id":"084532","nonce":"007","to":"0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31","value":"000","data":"0xa0e7c9f49f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f0000000000000000000000000000000000000000000000000000000000e4e1c0","gas_limit":120000,"max_priority_fee_per_gas":"1000000","max_fee_per_gas":"1500000000"}` + "\n",
	} {
		got, err := ParseUnsignedTransaction(in)
		if err != nil {
			t.Fatalf("ParseUnsignedTransaction(%s): %v", in, err)
		}
		if !equalTx(got, want) {
			t.Errorf("ParseUnsignedTransaction(%s) = %+v, want %+v", in, got, want)
		}
	}
}

func TestParseUnsignedTransactionLimits(t *testing.T) {
	max256 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	in := `{"chain_id":"` + max256.String() + `","nonce":18446744073709551615,"to":"0x0000000000000000000000000000000000000000","value":` + max256.String() +
		`,"data":"","gas_limit":"0xffffffffffffffff","max_priority_fee_per_gas":0,"max_fee_per_gas":"0x` + strings.Repeat("f", 64) + `"}`
	u, err := ParseUnsignedTransaction(in)
	if err != nil {
		t.Fatal(err)
	}
	if u.ChainID.Cmp(max256) != 0 || u.Value.Cmp(max256) != 0 || u.MaxFeePerGas.Cmp(max256) != 0 ||
		u.Nonce != 1<<64-1 || u.GasLimit != 1<<64-1 || len(u.Data) != 0 || u.From != nil {
		t.Fatalf("limits: %+v", u)
	}
}

func TestParseUnsignedTransactionRefusals(t *testing.T) {
	// set replaces (or, with value "", removes) one key of readmeUnsignedTx.
	set := func(key, value string) string {
		fields, err := decodeObject(readmeUnsignedTx)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString("{")
		first := true
		for _, k := range append(requiredTxFields, "from") {
			v, ok := fields[k]
			if k == key {
				v, ok = []byte(value), value != ""
			}
			if !ok {
				continue
			}
			if !first {
				b.WriteString(",")
			}
			first = false
			b.WriteString(`"` + k + `":` + string(v))
		}
		b.WriteString("}")
		return b.String()
	}
	const two256 = "115792089237316195423570985008687907853269984665640564039457584007913129639936"
	for name, tc := range map[string]struct {
		in    string
		field string
		want  error
	}{
		"chain_id missing":       {set("chain_id", ""), "chain_id", ErrMissingField},
		"chain_id null":          {set("chain_id", "null"), "chain_id", ErrMissingField},
		"chain_id zero":          {set("chain_id", "0"), "chain_id", ErrZeroChainID},
		"chain_id zero string":   {set("chain_id", `"0x0"`), "chain_id", ErrZeroChainID},
		"chain_id negative":      {set("chain_id", "-1"), "chain_id", ErrNegative},
		"chain_id word":          {set("chain_id", `"base"`), "chain_id", ErrNotANumber},
		"chain_id fraction":      {set("chain_id", "1.5"), "chain_id", ErrNotANumber},
		"chain_id exponent":      {set("chain_id", "1e3"), "chain_id", ErrNotANumber},
		"chain_id bool":          {set("chain_id", "true"), "chain_id", ErrNotANumber},
		"chain_id 2^256":         {set("chain_id", two256), "chain_id", ErrOverflow},
		"nonce missing":          {set("nonce", ""), "nonce", ErrMissingField},
		"nonce negative string":  {set("nonce", `"-7"`), "nonce", ErrNegative},
		"nonce 2^64":             {set("nonce", "18446744073709551616"), "nonce", ErrOverflow},
		"nonce empty hex":        {set("nonce", `"0x"`), "nonce", ErrNotANumber},
		"nonce padded":           {set("nonce", `" 7"`), "nonce", ErrNotANumber},
		"nonce plus sign":        {set("nonce", `"+7"`), "nonce", ErrNotANumber},
		"nonce empty string":     {set("nonce", `""`), "nonce", ErrNotANumber},
		"nonce array":            {set("nonce", `[7]`), "nonce", ErrNotANumber},
		"to missing":             {set("to", ""), "to", ErrMissingField},
		"to short":               {set("to", `"0x7c1E3b52"`), "to", ErrInvalidAddress},
		"to without 0x":          {set("to", `"7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31"`), "to", ErrInvalidAddress},
		"to not hex":             {set("to", `"0xZZ1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31"`), "to", ErrInvalidAddress},
		"to number":              {set("to", `7`), "to", ErrInvalidAddress},
		"to empty":               {set("to", `""`), "to", ErrInvalidAddress},
		"value negative":         {set("value", "-1"), "value", ErrNegative},
		"value 2^256":            {set("value", `"`+two256+`"`), "value", ErrOverflow},
		"value huge":             {set("value", strings.Repeat("9", 100000)), "value", ErrOverflow},
		"value huge hex":         {set("value", `"0x`+strings.Repeat("f", 65)+`"`), "value", ErrOverflow},
		"data missing":           {set("data", ""), "data", ErrMissingField},
		"data odd":               {set("data", `"0xabc"`), "data", ErrInvalidHex},
		"data without 0x":        {set("data", `"abcd"`), "data", ErrInvalidHex},
		"data not hex":           {set("data", `"0xzz"`), "data", ErrInvalidHex},
		"data number":            {set("data", `12`), "data", ErrInvalidHex},
		"gas_limit fraction":     {set("gas_limit", "120000.0"), "gas_limit", ErrNotANumber},
		"gas_limit overflow":     {set("gas_limit", `"0x10000000000000000"`), "gas_limit", ErrOverflow},
		"tip missing":            {set("max_priority_fee_per_gas", ""), "max_priority_fee_per_gas", ErrMissingField},
		"tip above fee cap":      {set("max_priority_fee_per_gas", `"1500000001"`), "max_priority_fee_per_gas", ErrTipAboveFeeCap},
		"fee cap missing":        {set("max_fee_per_gas", ""), "max_fee_per_gas", ErrMissingField},
		"fee cap negative":       {set("max_fee_per_gas", `"-1500000000"`), "max_fee_per_gas", ErrNegative},
		"from malformed":         {set("from", `"0xbad"`), "from", ErrInvalidAddress},
		"from number":            {set("from", `1`), "from", ErrInvalidAddress},
		"duplicate nonce":        {strings.Replace(readmeUnsignedTx, `"nonce":7`, `"nonce":7,"nonce":8`, 1), "nonce", ErrDuplicateField},
		"duplicate unknown":      {strings.Replace(readmeUnsignedTx, `{`, `{"x":1,"x":2,`, 1), "x", ErrDuplicateField},
		"empty string":           {"", "", nil},
		"JSON null":              {"null", "", nil},
		"JSON array":             {"[]", "", nil},
		"truncated":              {readmeUnsignedTx[:40], "", nil},
		"trailing data":          {readmeUnsignedTx + "{}", "", nil},
		"quoted document":        {`"` + strings.ReplaceAll(readmeUnsignedTx, `"`, `\"`) + `"`, "", nil},
		"first missing reported": {`{}`, "chain_id", ErrMissingField},
	} {
		t.Run(name, func(t *testing.T) {
			u, err := ParseUnsignedTransaction(tc.in)
			var te *TransactionError
			if u != nil || !errors.As(err, &te) || !errors.Is(err, ErrInvalidTransaction) {
				t.Fatalf("ParseUnsignedTransaction = %+v, %v; want a *TransactionError", u, err)
			}
			if te.Field != tc.field || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v (field %q); want field %q, %v", err, te.Field, tc.field, tc.want)
			}
			if tc.field != "" && !strings.Contains(err.Error(), `field "`+tc.field+`"`) {
				t.Fatalf("Error() %q does not name the field", err)
			}
			if len(te.Value) > maxErrorValue+3 {
				t.Fatalf("Value is %d bytes long", len(te.Value))
			}
			cs := &countingSigner{Signer: mustSigner(t, cowKey)}
			if _, err := SignTransaction(context.Background(), cs, tc.in); !errors.As(err, &te) || cs.calls.Load() != 0 {
				t.Fatalf("SignTransaction = %v after %d signatures", err, cs.calls.Load())
			}
		})
	}
}

func TestTransactionErrorMessage(t *testing.T) {
	_, err := ParseUnsignedTransaction(strings.Replace(readmeUnsignedTx, `"nonce":7`, `"nonce":-7`, 1))
	if want := `signing: invalid transaction: field "nonce": negative number (got -7)`; err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %s", err, want)
	}
}

func TestUnsignedTransactionMarshalJSONRoundTrip(t *testing.T) {
	u, err := ParseUnsignedTransaction(strings.TrimSuffix(readmeUnsignedTx, "}") + `,"from":"` + strings.ToLower(cowAddr) + `"}`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"chain_id":84532,"nonce":7,"to":"0x7C1E3b52fa9d4C26E0a1F83B5D9E6a4c2b0f8e31","value":"0","data":"0xa0e7c9f49f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f0000000000000000000000000000000000000000000000000000000000e4e1c0","gas_limit":120000,"max_priority_fee_per_gas":"1000000","max_fee_per_gas":"1500000000","from":"` + cowAddr + `"}`
	if string(b) != want {
		t.Errorf("MarshalJSON =\n%s\nwant\n%s", b, want)
	}
	back, err := ParseUnsignedTransaction(string(b))
	if err != nil || !equalTx(back, u) {
		t.Errorf("round trip = %+v, %v; want %+v", back, err, u)
	}
	if _, err := (UnsignedTransaction{}).MarshalJSON(); err == nil {
		t.Error("MarshalJSON of the zero value must fail")
	}
	// The zero value builds (chain id 0, nothing to sign with) without panicking.
	if h := (UnsignedTransaction{}).SigningHash(); h == (common.Hash{}) {
		t.Error("SigningHash of the zero value is empty")
	}
}

func TestRecoverTransactionSenderRefusals(t *testing.T) {
	// go-ethereum's signers panic on chain id 0; a crafted raw transaction
	// with chain id 0 must be an error instead.
	to := common.HexToAddress(rail0Contract)
	zeroChain, err := types.NewTx(&types.DynamicFeeTx{
		ChainID: new(big.Int), GasTipCap: new(big.Int), GasFeeCap: new(big.Int), To: &to, Value: new(big.Int),
		V: big.NewInt(1), R: big.NewInt(1), S: big.NewInt(1),
	}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RecoverTransactionSender(hexutil.Encode(zeroChain)); !errors.Is(err, ErrZeroChainID) {
		t.Errorf("chain id 0: %v, want ErrZeroChainID", err)
	}
	// A valid encoding whose signature values recover nothing.
	badSig, _ := types.NewTx(&types.DynamicFeeTx{
		ChainID: big.NewInt(1), GasTipCap: new(big.Int), GasFeeCap: new(big.Int), To: &to, Value: new(big.Int),
		V: big.NewInt(0), R: new(big.Int), S: new(big.Int),
	}).MarshalBinary()
	if _, err := RecoverTransactionSender(hexutil.Encode(badSig)); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("zero signature: %v, want ErrInvalidSignature", err)
	}
	for _, in := range []string{"", "0x", "02f8", "0xzz", "0x02", "0x02c0", readmeSignedTx[:len(readmeSignedTx)-2]} {
		if _, err := RecoverTransactionSender(in); !errors.Is(err, ErrInvalidTransaction) {
			t.Errorf("RecoverTransactionSender(%.12q) = %v", in, err)
		}
	}
}

// equalTx compares two transactions by value (big.Int internals may differ
// for equal numbers, which reflect.DeepEqual would see).
func equalTx(a, b *UnsignedTransaction) bool {
	eqAddr := func(x, y *common.Address) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.ChainID.Cmp(b.ChainID) == 0 && a.Nonce == b.Nonce && a.To == b.To &&
		a.Value.Cmp(b.Value) == 0 && string(a.Data) == string(b.Data) && a.GasLimit == b.GasLimit &&
		a.MaxPriorityFeePerGas.Cmp(b.MaxPriorityFeePerGas) == 0 && a.MaxFeePerGas.Cmp(b.MaxFeePerGas) == 0 &&
		eqAddr(a.From, b.From)
}
