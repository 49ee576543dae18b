package rail0

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file is the payer's signature of a payment (PayerSign): no
// transaction, but the EIP-3009 authorization the payment's escrow or
// charge will spend.

// PaymentPayerSignParams is the request of PayerSign.
type PaymentPayerSignParams struct {
	// Expect is the order the payment must match. PayerSign needs it, with
	// ChainID, Mode, Token, Payee and Amount set, unless this client
	// created the payment and still remembers what Create asked for.
	Expect Expectation
	// PollInterval and MaxPollInterval pace the re-reads of a payment whose
	// signing_payload is null, as they pace WaitForStatus's polls (see
	// PaymentWaitForStatusParams).
	PollInterval, MaxPollInterval time.Duration
}

// payerSignReads bounds how often PayerSign reads a payment whose
// signing_payload is null before giving up.
const payerSignReads = 5

// PayerSign has the client's signer (the payer) sign the payment's EIP-3009
// authorization and stores the signature, moving the payment from unsigned
// to signed. The signing_payload is checked against the payment first
// (TransferWithAuthorization over the token's domain on the payment's chain,
// from the payer to the RAIL0 contract, exactly the payment's amount, valid
// until authorization_expiry, with the nonce recomputed locally) and the
// payment against its config_hash, and the expiries it commits to against
// the client's bounds (WithExpiryBounds: by default authorization_expiry at
// most 30 days ahead, refund_expiry 1 to 365 days ahead, on the local
// clock).
//
// The payment must also be the order the payer means to pay, since the
// gateway could answer Create with one payment and this read with another,
// consistent in itself. On the client that created it, the payment must
// carry what Create asked for: chain, mode, token, payer, payee and amount
// (in base units with the pinned decimals). params.Expect is checked too,
// and takes the record's place when there is none: after a restart, on
// another client, or once more than 1024 newer payments were created. With
// neither, PayerSign refuses before any request (ErrUnbound): set Expect's
// ChainID, Mode, Token, Payee and Amount from the order, or call Create
// again with the order's IdempotencyKey, which the gateway answers with the
// same payment and which restores the record.
//
// A payment found signed already (status past unsigned, signed_at set),
// whether by this call's PUT answered already_signed after its first answer
// was lost or by an earlier call, is returned as a success when it is the
// payment bound and checked: the gateway keeps only a signature that
// recovers to the payer, this client's signer, over that payment's
// authorization.
//
// If the gateway answers with a null signing_payload (a transient node
// failure on its side), the payment is read again, waiting between reads as
// WaitForStatus does (params.PollInterval and MaxPollInterval apply), at
// most five reads in all.
//
// GET /payments/{id}, then PUT /payments/{id}/sign — the payer.
func (s *PaymentsService) PayerSign(ctx context.Context, id string, params PaymentPayerSignParams) (*PaymentDetail, error) {
	f, err := s.newFlow(id, "", params.Expect)
	if err != nil {
		return nil, err
	}
	cfg, err := s.client.newWaitConfig(params.PollInterval, params.MaxPollInterval)
	if err != nil {
		return nil, err
	}
	var payment *PaymentDetail
	var t *verify.Terms
	for read := 1; ; read++ {
		payment, t, _, err = f.read(ctx)
		if err != nil {
			return nil, err
		}
		if payment.Status != StatusUnsigned {
			if !isSigned(payment) {
				return nil, f.fail(StepRead, fmt.Errorf("%w (status %s)", ErrNotSignable, oneLine(string(payment.Status))))
			}
			if _, err := checkSigner(t, "", f.signer.Address()); err != nil {
				return nil, f.fail(StepVerify, err)
			}
			f.forgetAsked()
			return payment, nil // signed already, with the terms bound
		}
		if hasJSON(payment.SigningPayload) {
			break
		}
		if read == payerSignReads {
			return nil, f.fail(StepRead, ErrSigningPayloadUnavailable)
		}
		if err := cfg.sleep(ctx, cfg.next()); err != nil {
			return nil, f.fail(StepRead, err)
		}
	}
	if _, err := checkSigner(t, "", f.signer.Address()); err != nil {
		return nil, f.fail(StepVerify, err)
	}
	if err := s.client.checkExpiries(t); err != nil {
		return nil, f.fail(StepVerify, err)
	}
	sig, pc, err := f.signPayload(ctx, t, Intent{}, payment.SigningPayload)
	if err != nil {
		return nil, err
	}
	signed, err := s.SubmitSignature(ctx, id, PaymentSubmitSignatureParams{Signature: sig})
	if err != nil {
		done, ok := f.signedAlready(ctx, t, err)
		if !ok {
			return nil, f.fail(StepSubmit, err)
		}
		signed = done
	} else {
		// The gateway accepted the signature over this domain: the payer's
		// signature in a later authorize or charge can be recovered.
		s.client.learnTokenDomain(t, pc)
	}
	f.forgetAsked()
	return signed, nil
}

// checkExpiries checks the expiries the payer's signature commits to
// against the client's bounds (WithExpiryBounds), from the local clock.
func (c *Client) checkExpiries(t *verify.Terms) error {
	return fromVerify(verify.CheckExpiries(t, c.now(), c.expiries))
}

// forgetAsked drops this client's record of the payment once it is signed.
func (f *flow) forgetAsked() {
	if f.asked != nil {
		f.s.client.created.forget(f.askedKey)
	}
}

// hasJSON reports whether raw holds a JSON value other than null.
func hasJSON(raw json.RawMessage) bool {
	trimmed := strings.TrimSpace(string(raw))
	return trimmed != "" && trimmed != "null"
}
