package rail0test

import (
	"math/big"
	"testing"
)

func TestParseUnits(t *testing.T) {
	ok := map[string]string{
		"10.50":    "10500000",
		"25":       "25000000",
		"0.000001": "1",
		".5":       "500000",
		"007":      "7000000",
	}
	for in, want := range ok {
		got, err := parseUnits(in, 6)
		if err != nil || got.String() != want {
			t.Errorf("parseUnits(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".", "1.", "0", "0.000000", "-1", "+1", "1e3", "1,5", " 1", "1.0000001", "0x10", "1.2.3"} {
		if got, err := parseUnits(in, 6); err == nil {
			t.Errorf("parseUnits(%q) = %v, want an error", in, got)
		}
	}
}

func TestFormatUnits(t *testing.T) {
	cases := []struct {
		raw      int64
		decimals int
		want     string
	}{
		{15000000, 6, "15.00"},
		{10500001, 6, "10.500001"},
		{1, 6, "0.000001"},
		{0, 6, "0.00"},
		{-2500000, 6, "-2.50"},
		{42, 0, "42"},
	}
	for _, c := range cases {
		if got := formatUnits(big.NewInt(c.raw), c.decimals); got != c.want {
			t.Errorf("formatUnits(%d, %d) = %q, want %q", c.raw, c.decimals, got, c.want)
		}
	}
}
