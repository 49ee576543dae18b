package rail0

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file waits for what a flow started: a payment's status, or the
// confirmation of its transaction, by polling within the session's rate
// limit.

// Polling limits of WaitForStatus, WaitForTransaction and PayerSign. The
// gateway allows a session 300 requests per 60 s: one every 200 ms on
// average, shared by everything the session does. The default starts at
// one poll per second and slows down to one per ten seconds. Confirmations
// take from seconds to minutes.
const (
	// MinPollInterval is the shortest wait between two polls. It is the
	// session rate limit's average spacing (60 s / 300).
	MinPollInterval = 200 * time.Millisecond
	// DefaultPollInterval is the first wait between polls.
	DefaultPollInterval = time.Second
	// DefaultMaxPollInterval is the longest wait between polls. The wait
	// grows by half after each poll until it reaches it.
	DefaultMaxPollInterval = 10 * time.Second
)

// waitConfig paces one poll.
type waitConfig struct {
	interval, max time.Duration
	// sleep waits d or until ctx ends: pollSleep, or a test's (see
	// clientState.pollSleep).
	sleep func(ctx context.Context, d time.Duration) error
}

// newWaitConfig returns the pacing of a poll. first is the first wait
// between polls and last the longest one, as the params of WaitForStatus,
// WaitForTransaction and PayerSign give them:
//   - zero means DefaultPollInterval and DefaultMaxPollInterval (at least
//     first);
//   - values below MinPollInterval are raised to it, so a poller never
//     outpaces the session rate limit on its own;
//   - a negative value, or last below first, is a *ValidationError.
func (c *Client) newWaitConfig(first, last time.Duration) (*waitConfig, error) {
	if first < 0 || last < 0 {
		return nil, &ValidationError{Field: "poll_interval", Reason: "is negative"}
	}
	if first == 0 {
		first = DefaultPollInterval
	}
	if last == 0 {
		last = max(first, DefaultMaxPollInterval)
	}
	first, last = max(first, MinPollInterval), max(last, MinPollInterval)
	if last < first {
		return nil, &ValidationError{Field: "poll_interval", Reason: "MaxPollInterval is below PollInterval"}
	}
	sleep := c.pollSleep
	if sleep == nil {
		sleep = pollSleep
	}
	return &waitConfig{interval: first, max: last, sleep: sleep}, nil
}

// next returns the wait before the next poll and grows the following one.
func (c *waitConfig) next() time.Duration {
	d := c.interval
	grown := c.interval + c.interval/2
	if grown < c.interval || grown > c.max { // overflow, or past the cap
		grown = c.max
	}
	c.interval = grown
	return d
}

// pollSleep waits d, or returns ctx's error as soon as ctx ends.
func pollSleep(ctx context.Context, d time.Duration) error {
	if !sleepCtx(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// waitCondition is what a poll waits for: one of statuses, or the
// confirmation of a transaction.
type waitCondition struct {
	transactionID string
	// hash, when set, is the hash the transaction must carry to count: the
	// one the caller sent.
	hash     *verify.Word
	statuses []PaymentStatus
}

// TransactionFailedError is a transaction that the gateway marked failed.
// It was reverted on chain, or rejected before reaching it. Code uses the
// same values as error responses (for example CodeNonceTooLow: prepare
// again).
type TransactionFailedError struct {
	// PaymentID is the payment the transaction belongs to.
	PaymentID string
	// Transaction is the failed row as last read.
	Transaction *Transaction
	// Code is the row's error_code; empty when the gateway gave none.
	Code ErrorCode
	// Title is the row's error_title.
	Title string
	// Detail is the row's error_detail, or its older error_message.
	Detail string
}

// Error returns one readable line.
func (e *TransactionFailedError) Error() string {
	msg := "rail0: transaction of payment " + oneLine(e.PaymentID) + " failed"
	if tx := e.Transaction; tx != nil {
		msg = fmt.Sprintf("rail0: %s transaction %s of payment %s failed", oneLine(string(tx.Operation)), oneLine(tx.ID), oneLine(e.PaymentID))
	}
	if e.Code != "" {
		msg += ": " + oneLine(string(e.Code))
	}
	if e.Detail != "" {
		msg += ": " + oneLine(e.Detail)
	} else if e.Title != "" {
		msg += ": " + oneLine(e.Title)
	}
	return msg
}

// Is matches ErrTransactionFailed.
func (e *TransactionFailedError) Is(target error) bool { return target == ErrTransactionFailed }

// PaymentWaitForStatusParams says what WaitForStatus waits for, and how
// often it polls.
type PaymentWaitForStatusParams struct {
	// Statuses are the statuses to wait for; at least one is required.
	Statuses []PaymentStatus
	// PollInterval is the first wait between polls. It grows by half after
	// each poll, up to MaxPollInterval. Zero means DefaultPollInterval and
	// DefaultMaxPollInterval. Values below MinPollInterval are raised to
	// it.
	PollInterval, MaxPollInterval time.Duration
}

// WaitForStatus polls the payment until its status is one of
// params.Statuses. It returns the payment as last read. A failed
// transaction never changes a payment's status. So after submitting a
// step, prefer WaitForTransaction: it stops as soon as the transaction
// fails.
//
// Each poll is a GET /payments/{id} through the client's retry rules. It
// also goes through the client's pacing, when the client has WithPacing.
// A 429 is not fatal: the next poll waits at least its Retry-After (capped
// by WithRetryAfterCap). If that wait cannot end before ctx's deadline,
// the 429 comes back at once. Other errors end the wait.
//
// Between polls WaitForStatus waits params.PollInterval, growing to
// params.MaxPollInterval, never less than MinPollInterval. With the
// defaults, one waiter uses at most a fifth of the session's budget, and
// soon much less. It returns ctx's error as soon as ctx ends. That error
// matches the *APIError too when it was waiting out a 429. Give it a
// generous deadline: confirmations can take minutes.
//
// GET /payments/{id} — a participant.
func (s *PaymentsService) WaitForStatus(ctx context.Context, id string, params PaymentWaitForStatusParams) (*PaymentDetail, error) {
	if len(params.Statuses) == 0 {
		return nil, &ValidationError{Field: "statuses", Reason: "name at least one status to wait for"}
	}
	cfg, err := s.client.newWaitConfig(params.PollInterval, params.MaxPollInterval)
	if err != nil {
		return nil, err
	}
	p, _, err := s.wait(ctx, id, waitCondition{statuses: slices.Clone(params.Statuses)}, cfg)
	return p, err
}

// wait polls the payment until cond holds, paced by cfg. It returns the
// last payment read, with the transaction cond waited for (nil when it
// waits for a status).
func (s *PaymentsService) wait(ctx context.Context, id string, cond waitCondition, cfg *waitConfig) (*PaymentDetail, *Transaction, error) {
	for {
		payment, err := s.get(ctx, id, true)
		wait := cfg.next()
		var throttled *APIError // the 429 this wait honours
		if err == nil {
			s.client.learnPayment(id, payment) // a later flow's read, done
			tx, done, err := cond.check(payment)
			if done || err != nil {
				return payment, tx, err
			}
		} else {
			if !errors.As(err, &throttled) || throttled.StatusCode != http.StatusTooManyRequests {
				return nil, nil, err
			}
			// Wait at least the gateway's instruction. Like every
			// server-given wait, it is bounded by the client's
			// RetryAfterCap. As for a retry (the package doc's retry
			// contract), a wait that cannot end before the deadline is not
			// started: the 429 comes back now.
			lower := min(throttled.RetryAfter, s.client.policy.retryAfterCap)
			left := timeLeft(ctx, s.client.now())
			if max(wait, lower) >= left {
				return nil, nil, err
			}
			jittered, _ := serverWait(lower, lower, left-1, s.client.rand())
			wait = max(wait, jittered)
		}
		if err := cfg.sleep(ctx, wait); err != nil {
			if throttled != nil && isContextErr(err) {
				return nil, nil, throttled.withCause(err) // the 429 it was waiting out, and ctx's error
			}
			return nil, nil, err
		}
	}
}

// check reports whether the condition holds for p, or the error that ends
// the wait. It returns the transaction it waits for too. That is nil when
// it waits for a status, or when the payment does not show it.
func (c waitCondition) check(p *PaymentDetail) (*Transaction, bool, error) {
	if c.transactionID == "" {
		return nil, slices.Contains(c.statuses, p.Status), nil
	}
	for i := range p.Transactions {
		tx := &p.Transactions[i]
		if !sameUUID(c.transactionID, tx.ID) {
			continue
		}
		if c.hash != nil {
			if reason := notSentAs(tx, *c.hash); reason != "" {
				return nil, true, fmt.Errorf("%w: %s on payment %s %s", ErrUnknownTransaction, oneLine(c.transactionID), oneLine(p.ID), reason)
			}
		}
		switch tx.Status {
		case TxConfirmed:
			return tx, true, nil
		case TxFailed:
			return tx, true, &TransactionFailedError{
				PaymentID:   p.ID,
				Transaction: tx,
				Code:        deref(tx.ErrorCode),
				Title:       deref(tx.ErrorTitle),
				Detail:      firstNonEmpty(deref(tx.ErrorDetail), deref(tx.ErrorMessage)),
			}
		}
		return tx, false, nil
	}
	return nil, true, fmt.Errorf("%w: %s on payment %s", ErrUnknownTransaction, oneLine(c.transactionID), oneLine(p.ID))
}

// notSentAs reports why tx, the row a wait found, is not the transaction
// whose hash is hash. It returns "" when it may be: it carries hash, or
// carries no hash yet and is not confirmed. The checks are the rows of
// verify.ArtAwaitedRow.
func notSentAs(tx *Transaction, hash verify.Word) string {
	return reasonFor(verify.CheckAwaitedRow(rowOf(tx), hash))
}

// PaymentWaitForTransactionParams says which transaction WaitForTransaction
// waits for, besides its id, and how often it polls.
type PaymentWaitForTransactionParams struct {
	// TransactionHash, 0x + 64 hex, is the hash of the transaction sent.
	// The Transaction a flow, Submit or SubmitByHash returned carries it.
	// When set, only the row txID carrying it counts. A row confirmed
	// under another hash is another step, not this one. (A gateway or
	// proxy may name an earlier, confirmed row in its answers.) Set it
	// whenever you have it. Empty waits for txID alone.
	TransactionHash string
	// PollInterval and MaxPollInterval pace the polls as they pace
	// WaitForStatus's (see PaymentWaitForStatusParams).
	PollInterval, MaxPollInterval time.Duration
}

// WaitForTransaction waits until the payment's transaction txID is
// confirmed and returns it. A failed transaction is a
// *TransactionFailedError, returned as soon as the gateway reports it. It
// polls as WaitForStatus does. txID is a UUID and compares ignoring case.
//
// With params.TransactionHash, the row must carry that hash. A row txID
// that carries another, or is confirmed without one, ends the wait with
// ErrUnknownTransaction, never a success. So does a payment with no row
// txID, with or without a hash. A malformed hash is a *ValidationError
// before any request.
//
// GET /payments/{id} — a participant.
func (s *PaymentsService) WaitForTransaction(ctx context.Context, id, txID string, params PaymentWaitForTransactionParams) (*Transaction, error) {
	if txID == "" {
		return nil, &ValidationError{Field: "transaction id", Reason: "is required"}
	}
	cond := waitCondition{transactionID: txID}
	if params.TransactionHash != "" {
		h, err := parseTransactionHash(params.TransactionHash)
		if err != nil {
			return nil, err
		}
		cond.hash = &h
	}
	cfg, err := s.client.newWaitConfig(params.PollInterval, params.MaxPollInterval)
	if err != nil {
		return nil, err
	}
	p, found, err := s.wait(ctx, id, cond, cfg)
	if err != nil {
		return nil, err
	}
	tx := *found             // a copy: p may be the client's known terms' payment
	tx.Response = p.Response // the last poll's
	return &tx, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
