package verify

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/rail0/rail0-go/internal/evm"
)

// The rows that read a transaction (checks.go lists them). They read:
//   - the unsigned_transaction a prepare built;
//   - the row it answered with;
//   - the answer to its submit;
//   - a payment's row read back to reconcile a submit, or found by a wait.
//
// The rows of one artifact run in table order. A row may use what an
// earlier row read: the call's arguments, once its length is right.

// txCase is an unsigned_transaction read strictly, with what it must
// agree with. That is the terms, the intent, the trust that bounds its gas
// and the signer allowed for the step. extra names the call's own
// arguments. args holds every word of the call once its length is
// checked.
type txCase struct {
	t      *Terms
	in     Intent
	tr     *Trust
	tx     *Tx
	signer Address
	extra  []string
	args   map[string]Word
	// refundSig is the intent's refund signature, r ‖ s ‖ v, for a
	// refund; nil for another step.
	refundSig []byte
}

func (c *txCase) refuse(field, expected, got, reason string) error {
	return &Mismatch{PaymentID: c.t.ID, Operation: c.in.Operation, Artifact: "unsigned_transaction",
		Field: field, Expected: expected, Got: got, Reason: reason}
}

// txNonce: EIP-2681 caps an account nonce at 2⁶⁴−2.
func txNonce(c *txCase) error {
	if c.tx.nonce > maxAccountNonce {
		return c.refuse("nonce", "", fmt.Sprint(c.tx.nonce), "is above 2⁶⁴−2, the highest account nonce (EIP-2681)")
	}
	return nil
}

func txChain(c *txCase) error {
	if c.tx.chainID.Cmp(c.t.ChainID) != 0 {
		return c.refuse("chain_id", c.t.ChainID.String(), c.tx.chainID.String(), "")
	}
	return nil
}

func txTo(c *txCase) error {
	if c.tx.to != c.t.Contract {
		return c.refuse("to", c.t.Contract.String(), c.tx.to.String(), "")
	}
	return nil
}

func txValue(c *txCase) error {
	if c.tx.value.Sign() != 0 {
		return c.refuse("value", "0", c.tx.value.String(), "")
	}
	return nil
}

// txFrom: the sender, when the gateway names one, is the signer.
func txFrom(c *txCase) error {
	if c.tx.from != nil && *c.tx.from != c.signer {
		return c.refuse("from", c.signer.String(), c.tx.from.String(), "")
	}
	return nil
}

// txGasLimit: within the bound of the step (MaxGasLimit).
func txGasLimit(c *txCase) error {
	limit := c.tr.MaxGasLimit(c.in.Operation, c.t.ChainID.Int64())
	switch {
	case c.tx.gasLimit == 0:
		return c.refuse("gas_limit", "", "0", "is zero")
	case limit != 0 && c.tx.gasLimit > limit:
		return c.refuse("gas_limit", fmt.Sprintf("at most %d for %s", limit, c.in.Operation), fmt.Sprint(c.tx.gasLimit), "")
	}
	return nil
}

func txPriorityFee(c *txCase) error {
	if c.tx.maxPriorityFeePerGas.Cmp(c.tx.maxFeePerGas) > 0 {
		return c.refuse("max_priority_fee_per_gas", "at most max_fee_per_gas "+c.tx.maxFeePerGas.String(), c.tx.maxPriorityFeePerGas.String(), "")
	}
	return nil
}

// txMaxFee: gas_limit × max_fee_per_gas within the chain's fee bound, in
// its native unit (FeeBound).
func txMaxFee(c *txCase) error {
	chainID := c.t.ChainID.Int64()
	maxFee, ok := c.tr.FeeBound(chainID)
	if !ok {
		return c.refuse("max_fee_per_gas", "", "", fmt.Sprintf("cannot be bounded: chain %d has no default fee bound; set one with WithFeeCap", chainID))
	}
	if fee := new(big.Int).Mul(c.tx.maxFeePerGas, new(big.Int).SetUint64(c.tx.gasLimit)); fee.Cmp(maxFee) > 0 {
		return c.refuse("max_fee_per_gas", "gas_limit × max_fee_per_gas at most "+nativeAmount(chainID, maxFee), nativeAmount(chainID, fee), "")
	}
	return nil
}

// txSelector: the call is the step's function of the RAIL0 contract.
func txSelector(c *txCase) error {
	data, sel := c.tx.data, Selector(c.in.Operation)
	if len(data) < 4 || [4]byte(data[:4]) != sel {
		got := data
		if len(got) > 4 {
			got = got[:4]
		}
		return c.refuse("data.selector", fmt.Sprintf("0x%x (%s)", sel, callSignatures[c.in.Operation]), fmt.Sprintf("0x%x", got), "")
	}
	return nil
}

// txDataLength: selector, paymentId, the Payment tuple and the step's own
// arguments, all static 32-byte words, and nothing more; it reads them.
func txDataLength(c *txCase) error {
	data := c.tx.data
	if want := 4 + 32*(7+len(c.extra)); len(data) != want {
		return c.refuse("data", fmt.Sprintf("%d bytes", want), fmt.Sprintf("%d bytes", len(data)), "")
	}
	words := callWords[c.in.Operation]
	c.args = make(map[string]Word, len(words))
	for i, name := range words {
		c.args[name] = Word(data[4+32*i : 4+32*(i+1)])
	}
	return nil
}

func txPaymentID(c *txCase) error {
	if got := c.args["paymentId"]; got != c.t.Rail0ID {
		return c.refuse("data.paymentId", c.t.Rail0ID.String(), got.String(), "")
	}
	return nil
}

// txTerm is the row of the Payment tuple's term i: it must carry the
// payment's terms exactly.
func txTerm(i int) func(*txCase) error {
	return func(c *txCase) error {
		name := "p." + termNames[i]
		if want, got := c.t.Words()[i], c.args[name]; got != want {
			return c.refuse("data."+name, want.String(), got.String(), "")
		}
		return nil
	}
}

// txAmount: a capture or a refund moves exactly the amount asked for.
func txAmount(c *txCase) error {
	w, ok := c.args["amount"]
	if !ok {
		return nil
	}
	want, err := ParseUintText(c.in.Amount, 120)
	if err != nil || want.Sign() == 0 {
		return &Invalid{Field: "amount", Reason: "must be a positive base-unit integer"}
	}
	if got := new(big.Int).SetBytes(w[:]); got.Cmp(want) != 0 {
		return c.refuse("data.amount", want.String(), got.String(), "")
	}
	return nil
}

// txReason: a dispute step carries the reason asked for (zero if none).
func txReason(c *txCase) error {
	w, ok := c.args["reason"]
	if !ok {
		return nil
	}
	var want Word
	if c.in.Reason != "" {
		var err error
		if want, err = ParseWord(c.in.Reason); err != nil {
			return &Invalid{Field: "reason", Reason: err.Error()}
		}
	}
	if w != want {
		return c.refuse("data.reason", want.String(), w.String(), "")
	}
	return nil
}

// The v, r, s of an authorize, charge or refund call. For a refund they
// must be the payee signature the caller just produced. For authorize and
// charge they are the payer's signature, which the SDK did not produce.
// It must be well formed with a low s: the tokens refuse the high twin.
// When the token's EIP-712 name and version are known, it must recover to
// the payer over the payment's authorization.

// refundPart checks the call's argument name against want, its part of
// the refund signature the caller just produced.
func (c *txCase) refundPart(name string, got, want Word) error {
	if got != want {
		return c.refuse("data."+name, want.String(), got.String(), "")
	}
	return nil
}

func txV(c *txCase) error {
	v, ok := c.args["v"]
	if !ok {
		return nil
	}
	if c.refundSig != nil {
		return c.refundPart("v", v, U64Word(uint64(c.refundSig[64])))
	}
	if v != U64Word(27) && v != U64Word(28) {
		return c.refuse("data.v", "27 or 28", v.String(), "")
	}
	return nil
}

func txS(c *txCase) error {
	s, ok := c.args["s"]
	if !ok {
		return nil
	}
	if c.refundSig != nil {
		return c.refundPart("s", s, Word(c.refundSig[32:64]))
	}
	if c.args["r"] == (Word{}) || s == (Word{}) || !evm.IsLowS(s[:]) {
		return c.refuse("data.s", "a non-zero r and an s in the lower half of the curve order", s.String(), "")
	}
	return nil
}

func txR(c *txCase) error {
	r, ok := c.args["r"]
	if !ok {
		return nil
	}
	if c.refundSig != nil {
		return c.refundPart("r", r, Word(c.refundSig[:32]))
	}
	t := c.t
	dom, ok := c.tr.TokenDomains[TokenKey{t.ChainID.Int64(), t.Token}]
	if !ok {
		return nil
	}
	digest := AuthorizationDigest(t, "TransferWithAuthorization", dom[0], dom[1], t.Payer, t.Amount, t.AuthExpiry, t.Nonce(c.in.Operation))
	s, v := c.args["s"], c.args["v"]
	sig := append(append(append([]byte{}, r[:]...), s[:]...), v[31])
	got, err := evm.Recover(digest, sig)
	if err != nil || Address(got) != t.Payer {
		return c.refuse("data.r", "the payer's signature of the payment", "a signature by "+Address(got).String(), "")
	}
	return nil
}

// MaxRowID bounds the length of a transaction id. The contract's ids are
// UUIDs (36 bytes). The client keeps none longer, so that an answer cannot
// make what it keeps large.
const MaxRowID = 64

// Row is what the rows read of a payment's transaction row (rail0.Transaction).
type Row struct {
	ID, PaymentID, Operation, Status string
	Amount, Hash                     *string
}

// preparedCase is the row a prepare of op answered with. id names the
// payment as the caller did, paymentID is its UUID. amount is the base
// units asked for, "" when the step takes none. sent says why a row id
// was sent already, "" when it was not.
type preparedCase struct {
	row               Row
	id, op, paymentID string
	amount            string
	sent              func(id string) string
}

func (c *preparedCase) refuse(field, expected, got, reason string) error {
	return &Mismatch{PaymentID: c.id, Operation: c.op, Artifact: "transaction", Field: field, Expected: expected, Got: got, Reason: reason}
}

// preparedID: a prepare answers with a new row, or the pending one not yet
// sent. A row sent already (confirmed, failed, carrying a hash) is not this
// step's. Its submit's answer would name it and its wait find it settled:
// the caller would take an old step for this one.
func preparedID(c *preparedCase) error {
	if n := len(c.row.ID); n > MaxRowID {
		return c.refuse("id", "", "", fmt.Sprintf("is %d bytes long, longer than a transaction id (a UUID) can be", n))
	}
	if why := c.sent(c.row.ID); why != "" {
		return c.refuse("id", "", "", fmt.Sprintf("names transaction %s, %s: a prepare answers with a new row, or the pending one not yet sent", Clip(c.row.ID), why))
	}
	return nil
}

func preparedOperation(c *preparedCase) error {
	if c.row.Operation != c.op {
		return c.refuse("operation", c.op, c.row.Operation, "")
	}
	return nil
}

func preparedPayment(c *preparedCase) error {
	if c.row.PaymentID != "" && c.row.PaymentID != c.paymentID {
		return c.refuse("payment_id", c.paymentID, c.row.PaymentID, "")
	}
	return nil
}

// preparedAmount: a pending transaction prepared earlier for another
// amount is handed back rather than a new one (Reused): never sign it.
func preparedAmount(c *preparedCase) error {
	if c.amount != "" && c.row.Amount != nil && *c.row.Amount != c.amount {
		return c.refuse("amount", c.amount, *c.row.Amount, "")
	}
	return nil
}

// Prepared is what the SDK knows of the row a submit sends: its id and its
// payment's UUID, each "" when unknown. Typed says the caller typed them:
// they compare ignoring case. The gateway's own ids compare exactly.
type Prepared struct {
	ID, PaymentID string
	Typed         bool
}

// same reports whether got, an id in an answer, is want, an id of the
// prepared row.
func (p Prepared) same(want, got string) bool {
	if p.Typed {
		return strings.EqualFold(want, got)
	}
	return want == got
}

// answerCase is the 2xx answer to a submit of op whose transaction hash is
// hash, of the row prepared.
type answerCase struct {
	row      Row
	op       string
	hash     Word
	prepared Prepared
}

// answerID: the answer is the transaction as it stands, the row prepared
// (prepare again while it is pending returns that same row).
func answerID(c *answerCase) error {
	switch {
	case c.row.ID == "":
		return reasonOnly(ArtSubmitAnswer, "id", "carries no transaction id")
	case c.prepared.ID != "" && !c.prepared.same(c.prepared.ID, c.row.ID):
		return reasonOnly(ArtSubmitAnswer, "id", "is transaction %q, not %s, the one prepared", Clip(c.row.ID), Clip(c.prepared.ID))
	}
	return nil
}

func answerOperation(c *answerCase) error {
	if c.row.Operation != c.op {
		return reasonOnly(ArtSubmitAnswer, "operation", "is a transaction of operation %q, not %s", Clip(c.row.Operation), c.op)
	}
	return nil
}

func answerPayment(c *answerCase) error {
	if p := c.prepared; p.PaymentID != "" && c.row.PaymentID != "" && !p.same(p.PaymentID, c.row.PaymentID) {
		return reasonOnly(ArtSubmitAnswer, "payment_id", "is a transaction of payment %q, not %s", Clip(c.row.PaymentID), Clip(p.PaymentID))
	}
	return nil
}

// answerHash: a hash that is there is the hash of what was signed or
// reported, since the answer is about that transaction.
func answerHash(c *answerCase) error { return hashSent(ArtSubmitAnswer, c.row, c.hash) }

// hashSent refuses a row carrying another hash than hash, the hash sent.
func hashSent(a Artifact, row Row, hash Word) error {
	if row.Hash == nil || *row.Hash == "" {
		return nil
	}
	if got, err := ParseWord(*row.Hash); err != nil || got != hash {
		return reasonOnly(a, "transaction_hash", "carries transaction_hash %q, not %s, the hash of the transaction sent", Clip(*row.Hash), hash)
	}
	return nil
}

// submittedCase is a payment read back to reconcile a submit of op to the
// payment named, whose transaction hash is hash. The transactions row
// finds the row sent.
type submittedCase struct {
	named, uuid, rail0ID string
	rows                 []Row
	op                   string
	hash                 Word
	found                int
}

// submittedNamed: the payment read is the one the submit addressed.
func submittedNamed(c *submittedCase) error {
	if !NamedBy(c.named, c.uuid, c.rail0ID) {
		return reasonOnly(ArtSubmittedRow, "id", "is payment %q, not %s", Clip(c.uuid), Clip(c.named))
	}
	return nil
}

// submittedRow: one of its rows is the transaction of op carrying the hash
// sent. A row without a hash proves nothing about what was sent.
func submittedRow(c *submittedCase) error {
	for i, row := range c.rows {
		if row.Operation != c.op || row.Hash == nil || *row.Hash == "" {
			continue
		}
		if hashSent(ArtSubmittedRow, row, c.hash) == nil {
			c.found = i
			return nil
		}
	}
	return reasonOnly(ArtSubmittedRow, "transactions", "hold no %s transaction carrying %s, the hash of the transaction sent", c.op, c.hash)
}

// awaitedCase is the row a wait found, and the hash sent.
type awaitedCase struct {
	row  Row
	hash Word
}

// awaitedHash: a row carrying another hash is another transaction,
// however its id reads. A confirmed row without a hash proves nothing
// about what was sent. Neither changes with more polls.
func awaitedHash(c *awaitedCase) error {
	if c.row.Hash != nil && *c.row.Hash != "" {
		return hashSent(ArtAwaitedRow, c.row, c.hash)
	}
	if c.row.Status == "confirmed" {
		return reasonOnly(ArtAwaitedRow, "transaction_hash", "is confirmed without a transaction_hash, not shown to be %s, the hash sent", c.hash)
	}
	return nil
}
