package rail0test

import (
	"errors"
	"math/big"
	"strings"
)

// parseUnits converts a human decimal such as "10.50" into base units of a
// token with the given decimals. It refuses signs, exponents and empty
// parts. It refuses more fractional digits than decimals. It returns a
// value > 0.
func parseUnits(s string, decimals int) (*big.Int, error) {
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return nil, errors.New("empty amount")
	}
	if hasDot && frac == "" {
		return nil, errors.New("missing fractional digits")
	}
	for _, part := range []string{whole, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return nil, errors.New("amount must be a plain decimal number")
			}
		}
	}
	if len(frac) > decimals {
		return nil, errors.New("too many decimal places for this token")
	}
	digits := whole + frac + strings.Repeat("0", decimals-len(frac))
	v, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, errors.New("amount must be a plain decimal number")
	}
	if v.Sign() <= 0 {
		return nil, errors.New("amount must be positive")
	}
	return v, nil
}

// formatUnits renders base units as a human decimal.
// It shows at least two fractional digits: 15000000 with 6 decimals is
// "15.00".
func formatUnits(v *big.Int, decimals int) string {
	s := new(big.Int).Abs(v).String()
	if len(s) <= decimals {
		s = strings.Repeat("0", decimals-len(s)+1) + s
	}
	whole, frac := s[:len(s)-decimals], s[len(s)-decimals:]
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 && decimals >= 2 {
		frac += "0"
	}
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if v.Sign() < 0 {
		out = "-" + out
	}
	return out
}
