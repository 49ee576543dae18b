package jitter

import (
	"math"
	"testing"
)

func TestClamp(t *testing.T) {
	below1 := math.Nextafter(1, 0)
	for _, tt := range []struct {
		name string
		in   float64
		want float64
	}{
		{"zero", 0, 0},
		{"inside", 0.25, 0.25},
		{"just below 1", below1, below1},
		{"1", 1, below1},
		{"above 1", 7, below1},
		{"+Inf", math.Inf(1), below1},
		{"negative", -0.5, 0},
		{"-Inf", math.Inf(-1), 0},
		{"NaN", math.NaN(), 0},
	} {
		if got := Clamp(tt.in); got != tt.want {
			t.Errorf("%s: Clamp(%v) = %v, want %v", tt.name, tt.in, got, tt.want)
		}
	}
}
