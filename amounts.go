package rail0

import (
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/rail0/rail0-go/internal/verify"
)

// MaxDecimals is the largest decimals value the amount helpers accept.
// ERC-20 tokens report decimals as a uint8, so no real token exceeds it.
// The bound also keeps a corrupted value from allocating a huge string.
const MaxDecimals = 255

// Sentinel errors returned (wrapped in *AmountError) by ToBaseUnits and
// FormatAmount. Test for them with errors.Is.
var (
	// ErrMalformedAmount reports an amount string outside the accepted
	// grammar (see ToBaseUnits and FormatAmount).
	ErrMalformedAmount = errors.New("malformed amount")
	// ErrExcessPrecision reports a human amount with a non-zero digit
	// beyond the token's decimals. It cannot be expressed in base units
	// without rounding.
	ErrExcessPrecision = errors.New("amount has more precision than the token's decimals")
	// ErrDecimalsOutOfRange reports a decimals argument below 0 or above
	// MaxDecimals.
	ErrDecimalsOutOfRange = errors.New("decimals out of range")
)

// AmountError describes why an amount could not be converted. It unwraps to
// one of ErrMalformedAmount, ErrExcessPrecision or ErrDecimalsOutOfRange.
type AmountError struct {
	// Op is the function that failed: "ToBaseUnits" or "FormatAmount".
	Op string
	// Amount is the input as given (amounts are not secret).
	Amount string
	// Decimals is the decimals argument as given.
	Decimals int64
	// Err is the sentinel describing the failure.
	Err error
}

// Error returns a one-line description naming the input.
func (e *AmountError) Error() string {
	in := e.Amount
	const maxShown = 64
	if len(in) > maxShown {
		in = in[:maxShown] + "..."
	}
	return fmt.Sprintf("rail0: %s(%q, %d): %v", e.Op, in, e.Decimals, e.Err)
}

// Unwrap returns the sentinel error.
func (e *AmountError) Unwrap() error { return e.Err }

// ToBaseUnits converts a human decimal amount such as "1.50" into the
// token's base units, as an integer string. ToBaseUnits("1.50", 6) returns
// "1500000". decimals is the token's decimals (Token.Decimals). The result
// has no leading zeros ("0" for zero).
//
// Use it for the amounts the gateway expects in base units: the min_amount
// and max_amount filters of Payments.List. Use it also to check a human
// amount against a token before sending it.
//
// Accepted grammar:
//
//	digits [ "." digits ]
//
// where digits are ASCII 0-9. Both sides of the dot need at least one
// digit. These are refused:
//   - signs, exponents, spaces, underscores, thousands separators;
//   - a leading dot (".5"), a trailing dot ("5.") and more than one dot.
//
// An ambiguous or locale-dependent money string is a bug at the call site,
// not something to guess about. Leading zeros ("007.50") are accepted
// because they do not change the value.
//
// Fractional digits beyond decimals are accepted only when they are all zero
// ("1.500" with 2 decimals is exactly 150). A non-zero digit there ("1.505"
// with 2 decimals) is refused with ErrExcessPrecision: money is never rounded
// or truncated.
//
// Errors are *AmountError wrapping ErrMalformedAmount, ErrExcessPrecision or
// ErrDecimalsOutOfRange.
func ToBaseUnits(amount string, decimals int64) (string, error) {
	fail := func(err error) (string, error) {
		return "", &AmountError{Op: "ToBaseUnits", Amount: amount, Decimals: decimals, Err: err}
	}
	if decimals < 0 || decimals > MaxDecimals {
		return fail(ErrDecimalsOutOfRange)
	}
	whole, frac, hasDot := strings.Cut(amount, ".")
	if !isDigits(whole) || (hasDot && !isDigits(frac)) {
		return fail(ErrMalformedAmount)
	}
	if int64(len(frac)) > decimals {
		excess := frac[decimals:]
		if strings.Trim(excess, "0") != "" {
			return fail(ErrExcessPrecision)
		}
		frac = frac[:decimals]
	}
	digits := whole + frac + strings.Repeat("0", int(decimals)-len(frac))
	var n big.Int
	if _, ok := n.SetString(digits, 10); !ok {
		// Unreachable: digits holds only ASCII digits and is non-empty.
		return fail(ErrMalformedAmount)
	}
	return n.String(), nil
}

// FormatAmount converts a base-unit integer string into a human decimal.
// FormatAmount("1500000", 6) returns "1.5". The result is the shortest
// exact form. It has no trailing fractional zeros and no trailing dot. It
// has no leading zeros, except a single "0" before the dot ("0.000001",
// "25", "0").
//
// amount must be one or more ASCII digits (base units are never negative).
// Errors are *AmountError wrapping ErrMalformedAmount or
// ErrDecimalsOutOfRange.
func FormatAmount(amount string, decimals int64) (string, error) {
	fail := func(err error) (string, error) {
		return "", &AmountError{Op: "FormatAmount", Amount: amount, Decimals: decimals, Err: err}
	}
	if decimals < 0 || decimals > MaxDecimals {
		return fail(ErrDecimalsOutOfRange)
	}
	if !isDigits(amount) {
		return fail(ErrMalformedAmount)
	}
	var n big.Int
	if _, ok := n.SetString(amount, 10); !ok {
		// Unreachable: amount holds only ASCII digits and is non-empty.
		return fail(ErrMalformedAmount)
	}
	return verify.FormatUnits(&n, decimals), nil
}

// isDigits reports whether s is non-empty and made only of ASCII digits.
func isDigits(s string) bool { return verify.IsDigits(s) }
