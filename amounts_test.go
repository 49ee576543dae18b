package rail0

import (
	"errors"
	"math/big"
	"strings"
	"testing"
)

func TestToBaseUnits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		amount   string
		decimals int64
		want     string
	}{
		{"1.50", 6, "1500000"},
		{"1.5", 6, "1500000"},
		{"25", 6, "25000000"},
		{"25.00", 6, "25000000"},
		{"10.50", 6, "10500000"},
		{"0", 6, "0"},
		{"0.0", 6, "0"},
		{"0.000001", 6, "1"},
		{"007.50", 2, "750"},
		{"1.500", 2, "150"},     // excess digits are zeros: exact, accepted
		{"1.000000000", 0, "1"}, // same with no decimals at all
		{"12", 0, "12"},         // decimals 0
		{"1", 18, "1000000000000000000"},
		{"115792089237316195423570985008687907853269984665640564039457.584007913129639935", 18,
			"115792089237316195423570985008687907853269984665640564039457584007913129639935"}, // 2^256-1 wei
		{"0.1", MaxDecimals, "1" + strings.Repeat("0", MaxDecimals-1)},
	}
	for _, tt := range tests {
		got, err := ToBaseUnits(tt.amount, tt.decimals)
		if err != nil {
			t.Errorf("ToBaseUnits(%q, %d): unexpected error %v", tt.amount, tt.decimals, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ToBaseUnits(%q, %d) = %q, want %q", tt.amount, tt.decimals, got, tt.want)
		}
	}
}

func TestToBaseUnitsRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		amount   string
		decimals int64
		want     error
	}{
		{"", 6, ErrMalformedAmount},
		{" 1.5", 6, ErrMalformedAmount},
		{"1.5 ", 6, ErrMalformedAmount},
		{"1 000", 6, ErrMalformedAmount},
		{"1,000.00", 6, ErrMalformedAmount},
		{"1_000", 6, ErrMalformedAmount},
		{"-1.5", 6, ErrMalformedAmount},
		{"+1.5", 6, ErrMalformedAmount},
		{"1e6", 6, ErrMalformedAmount},
		{"1.5E2", 6, ErrMalformedAmount},
		{"0x10", 6, ErrMalformedAmount},
		{"1.2.3", 6, ErrMalformedAmount},
		{".5", 6, ErrMalformedAmount},
		{"5.", 6, ErrMalformedAmount},
		{".", 6, ErrMalformedAmount},
		{"abc", 6, ErrMalformedAmount},
		{"１", 6, ErrMalformedAmount}, // full-width digit: not ASCII
		{"NaN", 6, ErrMalformedAmount},
		{"Inf", 6, ErrMalformedAmount},
		{"1.0000001", 6, ErrExcessPrecision},
		{"1.5", 0, ErrExcessPrecision},
		{"0.001", 2, ErrExcessPrecision},
		{"1.5", -1, ErrDecimalsOutOfRange},
		{"1.5", MaxDecimals + 1, ErrDecimalsOutOfRange},
	}
	for _, tt := range tests {
		got, err := ToBaseUnits(tt.amount, tt.decimals)
		if !errors.Is(err, tt.want) {
			t.Errorf("ToBaseUnits(%q, %d) = %q, %v; want error %v", tt.amount, tt.decimals, got, err, tt.want)
			continue
		}
		if got != "" {
			t.Errorf("ToBaseUnits(%q, %d) returned %q alongside an error", tt.amount, tt.decimals, got)
		}
		var ae *AmountError
		if !errors.As(err, &ae) {
			t.Fatalf("ToBaseUnits(%q, %d): error %T is not *AmountError", tt.amount, tt.decimals, err)
		}
		if ae.Op != "ToBaseUnits" || ae.Amount != tt.amount || ae.Decimals != tt.decimals {
			t.Errorf("AmountError fields = %+v, want Op ToBaseUnits, Amount %q, Decimals %d", ae, tt.amount, tt.decimals)
		}
	}
}

func TestFormatAmount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		amount   string
		decimals int64
		want     string
	}{
		{"1500000", 6, "1.5"},
		{"25000000", 6, "25"},
		{"10500000", 6, "10.5"},
		{"15000000", 6, "15"},
		{"1", 6, "0.000001"},
		{"0", 6, "0"},
		{"000", 6, "0"},
		{"0001500000", 6, "1.5"},
		{"12", 0, "12"},
		{"100", 2, "1"},
		{"101", 2, "1.01"},
		{"115792089237316195423570985008687907853269984665640564039457584007913129639935", 18,
			"115792089237316195423570985008687907853269984665640564039457.584007913129639935"},
	}
	for _, tt := range tests {
		got, err := FormatAmount(tt.amount, tt.decimals)
		if err != nil {
			t.Errorf("FormatAmount(%q, %d): unexpected error %v", tt.amount, tt.decimals, err)
			continue
		}
		if got != tt.want {
			t.Errorf("FormatAmount(%q, %d) = %q, want %q", tt.amount, tt.decimals, got, tt.want)
		}
	}
}

func TestFormatAmountRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		amount   string
		decimals int64
		want     error
	}{
		{"", 6, ErrMalformedAmount},
		{"-1", 6, ErrMalformedAmount},
		{"+1", 6, ErrMalformedAmount},
		{"1.5", 6, ErrMalformedAmount}, // base units are integers
		{"1e6", 6, ErrMalformedAmount},
		{" 1", 6, ErrMalformedAmount},
		{"0x1", 6, ErrMalformedAmount},
		{"1", -1, ErrDecimalsOutOfRange},
		{"1", MaxDecimals + 1, ErrDecimalsOutOfRange},
	}
	for _, tt := range tests {
		got, err := FormatAmount(tt.amount, tt.decimals)
		if !errors.Is(err, tt.want) {
			t.Errorf("FormatAmount(%q, %d) = %q, %v; want error %v", tt.amount, tt.decimals, got, err, tt.want)
			continue
		}
		var ae *AmountError
		if !errors.As(err, &ae) || ae.Op != "FormatAmount" {
			t.Errorf("FormatAmount(%q, %d): error %#v is not an *AmountError from FormatAmount", tt.amount, tt.decimals, err)
		}
	}
}

func TestAmountErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := ToBaseUnits("1.505", 2)
	if got, want := err.Error(), `rail0: ToBaseUnits("1.505", 2): amount has more precision than the token's decimals`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	long := strings.Repeat("9", 200) + "x"
	_, err = FormatAmount(long, 6)
	if msg := err.Error(); len(msg) > 150 || !strings.Contains(msg, "...") {
		t.Errorf("Error() for a long input is not shortened: %q", msg)
	}
}

// FuzzAmountRoundTrip checks, for arbitrary inputs, that the two helpers are
// exact inverses, never round, and agree with a math/big.Rat reference.
func FuzzAmountRoundTrip(f *testing.F) {
	f.Add("1.50", uint8(6))
	f.Add("0", uint8(0))
	f.Add("1.505", uint8(2))
	f.Add("-1", uint8(6))
	f.Add("1e6", uint8(6))
	f.Add("000.000100", uint8(18))
	f.Fuzz(func(t *testing.T, amount string, dec uint8) {
		decimals := int64(dec)
		base, err := ToBaseUnits(amount, decimals)
		if err != nil {
			var ae *AmountError
			if !errors.As(err, &ae) {
				t.Fatalf("ToBaseUnits(%q, %d): error %T is not *AmountError", amount, decimals, err)
			}
			return
		}
		// Reference: amount * 10^decimals computed with big.Rat must be an
		// integer equal to base.
		r, ok := new(big.Rat).SetString(amount)
		if !ok {
			t.Fatalf("ToBaseUnits accepted %q, which big.Rat cannot parse", amount)
		}
		scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(decimals), nil)
		r.Mul(r, new(big.Rat).SetInt(scale))
		if !r.IsInt() || r.Num().String() != base {
			t.Fatalf("ToBaseUnits(%q, %d) = %q, want %s", amount, decimals, base, r.RatString())
		}
		human, err := FormatAmount(base, decimals)
		if err != nil {
			t.Fatalf("FormatAmount(%q, %d): %v", base, decimals, err)
		}
		back, err := ToBaseUnits(human, decimals)
		if err != nil || back != base {
			t.Fatalf("round trip %q -> %q -> %q -> %q, %v", amount, base, human, back, err)
		}
		if strings.HasSuffix(human, "0") && strings.Contains(human, ".") {
			t.Fatalf("FormatAmount(%q, %d) = %q keeps a trailing fractional zero", base, decimals, human)
		}
	})
}
