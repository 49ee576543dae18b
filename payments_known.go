package rail0

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file is what a client remembers of the payments it acts on. With
// it, a flow step costs the requests the contract needs (prepare and
// submit) and no read of the payment.
//
// A payment's terms never change once it is created. The chain keeps them
// under its rail0_id, and config_hash binds them. Terms this client has
// checked once need no second read. They come from a flow's read, a poll
// of WaitForStatus or WaitForTransaction, or the answer to its own Create.
// Every flow binds them again to what its caller names and expects, as it
// binds a read (payments_binding.go).
//
// Only the balances change, and one check depends on one of them: a
// refund's EIP-3009 nonce commits to the refundable balance before it. The
// client tracks that balance from its own steps and from every read:
//   - a capture adds to it;
//   - a charge sets it;
//   - a refund takes from it.
//
// Another client's capture or refund can make it stale. The refund's
// payload check then fails closed. Refund then reads the payment once and
// checks the same payload again.

// maxKnown bounds how many payments' terms a client keeps. The oldest go
// first. A payment forgotten costs one read, nothing else.
const maxKnown = 1024

// knownPayment is what a client holds of one payment.
type knownPayment struct {
	// payment is the checked record without what changes (its signing
	// payload, its metadata). It holds the fields a binding compares.
	//
	// Of its transactions it keeps only the rows reads showed sent (see
	// spentRows). A row once sent stays so, and a prepare that hands one
	// back is refused (flow.sentAlready). The rows came from answers, any
	// of which may have lied. So they go with the entry when it is
	// forgotten.
	payment *PaymentDetail
	// terms are its terms as checked with the client's pins. Their
	// Refundable is the balance as last read, or as this client's own
	// steps moved it.
	terms *verify.Terms
}

// knownPayments maps a payment as a caller named it to what the client
// checked of it under that name. The name is its UUID or its rail0_id,
// exactly as given.
type knownPayments struct {
	recent[knownPayment]
	// own maps a payment's UUID (foldID) to the ids of the rows this client
	// sent on it. They are kept oldest first, at most maxSpentRows.
	//
	// What the client did itself is no answer's claim. So it is kept apart
	// from what reads showed, and found whatever name a flow gives the
	// payment. It is not forgotten with the entry when a flow refuses what
	// it was prepared.
	own recent[[]string]
}

// remember keeps p under the name id. Its terms t were checked with the
// client's pins, and it is the payment id names.
func (k *knownPayments) remember(id string, p *PaymentDetail, t *verify.Terms) {
	kept := &PaymentDetail{Payment: p.Payment, ChainID: p.ChainID, Rail0Contract: p.Rail0Contract}
	kept.Metadata, kept.Description, kept.LastErrorCode, kept.LastErrorMessage = nil, nil, nil, nil
	terms := *t
	// The rows kept before are merged under the lock that stores the
	// result, so that no concurrent remember is lost between.
	k.merge(maxKnown, id, func(earlier knownPayment, ok bool) knownPayment {
		var rows []Transaction
		if ok {
			rows = earlier.payment.Transactions
		}
		kept.Transactions = spentRows(rows, p.Transactions)
		return knownPayment{payment: kept, terms: &terms}
	})
}

// sent records that this client sent the prepared row txID of the payment
// whose UUID is paymentID. A later prepare handing it back is then
// refused, whatever a read shows and whatever name the payment is given.
// The oldest of more than maxSpentRows go first.
func (k *knownPayments) sent(paymentID, txID string) {
	k.own.merge(maxKnown, foldID(paymentID), func(ids []string, _ bool) []string {
		if slices.ContainsFunc(ids, func(id string) bool { return sameUUID(txID, id) }) {
			return ids
		}
		ids = ids[max(0, len(ids)+1-maxSpentRows):]
		return append(slices.Clip(ids), txID) // a new array: sentBy may be reading the old
	})
}

// sentBy reports whether this client sent the row txID of the payment
// whose UUID is paymentID.
func (k *knownPayments) sentBy(paymentID, txID string) bool {
	ids, _ := k.own.get(foldID(paymentID))
	return slices.ContainsFunc(ids, func(id string) bool { return sameUUID(txID, id) })
}

// maxSpentRows bounds the rows a client keeps per payment (spentRows). It
// also bounds the ids it keeps of those it sent itself (own). A payment
// has a handful, so only a gateway inventing rows reaches it.
const maxSpentRows = 256

// maxRowID bounds the length of a transaction id the client keeps, as a
// prepared row's id is bounded (verify.MaxRowID).
const maxRowID = verify.MaxRowID

// spentRows returns the rows a prepare may not hand out again (wasSent).
// It takes those of read, then those of kept not among them. Each is
// reduced to its id, operation, status and hash. It returns at most
// maxSpentRows of them, none with an id longer than maxRowID. Ids compare
// ignoring case (sameUUID), as the wait matches them.
//
// It runs on every read by a client with a signer (each poll of a wait).
// So its work is bounded by the rows it looks at, never their square. An
// answer of half a million rows costs one pass over them.
func spentRows(kept, read []Transaction) []Transaction {
	if len(kept) == 0 && !slices.ContainsFunc(read, func(tx Transaction) bool { return wasSent(&tx) }) {
		return nil // the common poll: nothing sent yet, nothing to keep
	}
	out := make([]Transaction, 0, min(len(kept)+len(read), maxSpentRows))
	seen := make(map[string]struct{}, cap(out))
	add := func(tx *Transaction) bool {
		if len(out) == maxSpentRows {
			return false
		}
		if len(tx.ID) > maxRowID || !wasSent(tx) {
			return true
		}
		key := foldID(tx.ID)
		if _, dup := seen[key]; dup {
			return true
		}
		seen[key] = struct{}{}
		out = append(out, Transaction{ID: tx.ID, Operation: tx.Operation, Status: tx.Status, TransactionHash: tx.TransactionHash})
		return true
	}
	for i := range read {
		if !add(&read[i]) {
			return out
		}
	}
	for i := range kept {
		if !add(&kept[i]) {
			break
		}
	}
	return out
}

// foldID returns id with each letter replaced by one of the letters it
// equals ignoring case. For ASCII that is the lower-case one. Two ids get
// the same foldID exactly when sameUUID says they name one row. So a map
// keyed by it finds what sameUUID would. A lower-case UUID comes back as
// it is, with no copy.
func foldID(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		case r < utf8.RuneSelf:
			return r
		}
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		if 'A' <= least && least <= 'Z' {
			least += 'a' - 'A' // K (Kelvin) as k, ſ as s
		}
		return least
	}, id)
}

// wasSent reports whether tx was sent: it carries a hash, or is no longer
// pending. A prepare answers with a new row or with the pending one not
// yet sent (Reused). It never answers with one of these.
func wasSent(tx *Transaction) bool {
	return tx.Status != TxPending || (tx.TransactionHash != nil && *tx.TransactionHash != "")
}

// lookup returns the payment named id and a copy of its terms, with the
// refundable balance as tracked.
func (k *knownPayments) lookup(id string) (*PaymentDetail, *verify.Terms, bool) {
	kp, ok := k.get(id)
	if !ok {
		return nil, nil, false
	}
	t := *kp.terms
	return kp.payment, &t, true
}

// learnPayment checks a payment that a read of id returned. It remembers
// the payment when it passes the checks of a flow's read. Its terms must
// pass the client's pins and config_hash, and it must be the payment id
// names. A payment that does not pass is not remembered. The next flow
// reads it and refuses it there.
func (c *Client) learnPayment(id string, p *PaymentDetail) {
	if c.signer == nil || p == nil || !namedBy(p, id) {
		return // only flows use what is remembered, and only a signer runs them
	}
	if t, err := checkPayment(p, c.trust()); err == nil {
		c.known.remember(id, p, t)
	}
}

// stepped moves the tracked refundable balance of the payment named id.
// op is the step this client just submitted, for amount base units (a
// capture's or a refund's). The transaction may still fail on chain. A
// refund that then finds the balance stale reads the payment once.
func (k *knownPayments) stepped(id string, op Operation, amount string) {
	k.modify(id, func(kp *knownPayment) {
		t := *kp.terms
		switch op {
		case OpCapture, OpRefund:
			n, ok := new(big.Int).SetString(amount, 10)
			if !ok {
				return
			}
			if op == OpRefund {
				n.Neg(n)
			}
			t.Refundable = n.Add(n, t.Refundable)
			if t.Refundable.Sign() < 0 {
				t.Refundable.SetInt64(0)
			}
		case OpCharge:
			t.Refundable = t.Amount
		default:
			return
		}
		kp.terms = &t
	})
}

// terms returns the checked terms of the flow's payment, bound to the
// flow. They are the ones the client already holds under the name the
// caller gave, or a read. known reports the former. Their refundable
// balance is the client's tracking and may be stale.
//
// Terms held that fail the flow's binding are forgotten. The payment is
// then read once, and that read is bound as any. What is held came from
// one answer (a poll, another flow's read), which may have been the lie.
// Refusing from it without asking again would let one lie refuse every
// later flow on the payment. That would hold against an honest gateway,
// until 1024 others pushed it out. A binding the read fails too is refused
// there.
func (f *flow) terms(ctx context.Context) (t *verify.Terms, tr *verify.Trust, known bool, err error) {
	if p, t, ok := f.s.client.known.lookup(f.id); ok {
		if err := f.bind(p, t); err == nil {
			return t, f.s.client.trust(), true, nil
		}
		f.s.client.known.forget(f.id)
	}
	_, t, tr, err = f.read(ctx)
	return t, tr, false, err
}

// forgetOnRefusal drops the client's terms of the flow's payment when the
// flow, acting on them, refused what the gateway prepared. Terms that
// never change cannot be stale. So either the gateway is lying now, or an
// earlier read of this name was. The next flow reads the payment again and
// binds it afresh; err stands. The rows this client sent stay (own).
func (f *flow) forgetOnRefusal(known bool, err error) error {
	var fe *FlowError
	if known && errors.As(err, &fe) && fe.Step == StepVerify {
		f.s.client.known.forget(f.id)
	}
	return err
}

// recent maps keys to values and keeps at most a limit of them. When full,
// the oldest entry goes first. Updating an entry keeps its place. It is
// safe for concurrent use; the zero value is empty.
type recent[V any] struct {
	mu    sync.Mutex
	m     map[string]V
	order []string // keys, oldest first
}

// put stores v under key, forgetting the oldest entry when limit are kept.
func (r *recent[V]) put(limit int, key string, v V) {
	r.merge(limit, key, func(V, bool) V { return v })
}

// merge stores change(old, ok) under key. old is the value kept there, and
// ok says there is one. It runs under one hold of the lock, so two merges
// of one key each see the other's result. It forgets the oldest entry when
// limit are kept and key is new.
func (r *recent[V]) merge(limit int, key string, change func(old V, ok bool) V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]V{}
	}
	old, ok := r.m[key]
	if !ok {
		if len(r.order) >= limit {
			delete(r.m, r.order[0])
			r.order = r.order[1:]
		}
		r.order = append(r.order, key)
	}
	r.m[key] = change(old, ok)
}

func (r *recent[V]) get(key string) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[key]
	return v, ok
}

// modify changes the value under key in place, if there is one.
func (r *recent[V]) modify(key string, change func(*V)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.m[key]; ok {
		change(&v)
		r.m[key] = v
	}
}

// find returns the one entry match accepts, and nothing when none or
// several do. A key the gateway gave two entries names neither; one
// rail0_id answered for two Creates, say. The first found would be the
// map's random choice.
func (r *recent[V]) find(match func(key string, v V) bool) (string, V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var (
		key   string
		found V
		n     int
	)
	for k, v := range r.m {
		if match(k, v) {
			key, found, n = k, v, n+1
		}
	}
	if n != 1 {
		var zero V
		return "", zero, false
	}
	return key, found, true
}

func (r *recent[V]) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[key]; ok {
		delete(r.m, key)
		for i, k := range r.order {
			if k == key {
				r.order = append(r.order[:i:i], r.order[i+1:]...)
				break
			}
		}
	}
}
