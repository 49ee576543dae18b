package evm

import (
	"errors"
	"math/big"
)

// The secp256k1 curve y² = x³ + 7 over F_p, with generator G of order N.
var (
	curveP, _  = new(big.Int).SetString("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f", 16)
	curveN, _  = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	curveGx, _ = new(big.Int).SetString("79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798", 16)
	curveGy, _ = new(big.Int).SetString("483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8", 16)
	halfN      = new(big.Int).Rsh(curveN, 1)
	sqrtExp    = new(big.Int).Rsh(new(big.Int).Add(curveP, big.NewInt(1)), 2) // (p+1)/4
)

// ErrInvalidSignature is returned by Recover for a signature that cannot be
// valid on secp256k1: r or s out of range, a recovery id other than 0, 1,
// 27 or 28, or an r that is not the x of a curve point.
var ErrInvalidSignature = errors.New("invalid secp256k1 signature")

// point is an affine curve point; nil is the point at infinity.
type point struct{ x, y *big.Int }

func (a *point) add(b *point) *point {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	var lambda *big.Int
	if a.x.Cmp(b.x) == 0 {
		if a.y.Cmp(b.y) != 0 || a.y.Sign() == 0 {
			return nil // P + (−P)
		}
		// λ = 3x² / 2y
		num := new(big.Int).Mul(a.x, a.x)
		num.Mul(num, big.NewInt(3))
		den := new(big.Int).Lsh(a.y, 1)
		lambda = num.Mul(num, den.ModInverse(den.Mod(den, curveP), curveP))
	} else {
		// λ = (y2 − y1) / (x2 − x1)
		num := new(big.Int).Sub(b.y, a.y)
		den := new(big.Int).Sub(b.x, a.x)
		lambda = num.Mul(num, den.ModInverse(den.Mod(den, curveP), curveP))
	}
	lambda.Mod(lambda, curveP)
	x := new(big.Int).Mul(lambda, lambda)
	x.Sub(x, a.x).Sub(x, b.x).Mod(x, curveP)
	y := new(big.Int).Sub(a.x, x)
	y.Mul(y, lambda).Sub(y, a.y).Mod(y, curveP)
	return &point{x, y}
}

func (a *point) mul(k *big.Int) *point {
	var acc *point
	for i := k.BitLen() - 1; i >= 0; i-- {
		acc = acc.add(acc)
		if k.Bit(i) == 1 {
			acc = acc.add(a)
		}
	}
	return acc
}

// IsLowS reports whether s is in the lower half of the curve order, as
// Ethereum (and the tokens' ecrecover checks) require.
func IsLowS(s []byte) bool {
	return new(big.Int).SetBytes(s).Cmp(halfN) <= 0
}

// Recover returns the address whose key produced sig (65 bytes r ‖ s ‖ v,
// v = 0, 1, 27 or 28) over digest. It is slow (milliseconds) and not
// constant-time, which is fine for public data: it runs on signatures, never
// on keys.
func Recover(digest [32]byte, sig []byte) ([20]byte, error) {
	var addr [20]byte
	if len(sig) != 65 {
		return addr, ErrInvalidSignature
	}
	r := new(big.Int).SetBytes(sig[:32])
	s := new(big.Int).SetBytes(sig[32:64])
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 || r.Sign() == 0 || s.Sign() == 0 || r.Cmp(curveN) >= 0 || s.Cmp(curveN) >= 0 {
		return addr, ErrInvalidSignature
	}
	// R = (r, y) with y of parity v.
	a := new(big.Int).Exp(r, big.NewInt(3), curveP)
	a.Add(a, big.NewInt(7)).Mod(a, curveP)
	y := new(big.Int).Exp(a, sqrtExp, curveP)
	if new(big.Int).Exp(y, big.NewInt(2), curveP).Cmp(a) != 0 {
		return addr, ErrInvalidSignature
	}
	if y.Bit(0) != uint(v) {
		y.Sub(curveP, y)
	}
	rInv := new(big.Int).ModInverse(r, curveN)
	e := new(big.Int).SetBytes(digest[:])
	u1 := new(big.Int).Neg(e)
	u1.Mul(u1, rInv).Mod(u1, curveN)
	u2 := new(big.Int).Mul(s, rInv)
	u2.Mod(u2, curveN)
	q := (&point{curveGx, curveGy}).mul(u1).add((&point{r, y}).mul(u2))
	if q == nil {
		return addr, ErrInvalidSignature
	}
	var pub [64]byte
	q.x.FillBytes(pub[:32])
	q.y.FillBytes(pub[32:])
	h := Keccak256(pub[:])
	copy(addr[:], h[12:])
	return addr, nil
}

// ScalarBaseMult returns k·G in affine coordinates, 32 bytes each. The root
// package never holds keys; this exists for internal/evmtest, whose test
// signer lets the root package's tests run without go-ethereum.
func ScalarBaseMult(k *big.Int) (x, y [32]byte) {
	q := (&point{curveGx, curveGy}).mul(new(big.Int).Mod(k, curveN))
	if q != nil {
		q.x.FillBytes(x[:])
		q.y.FillBytes(y[:])
	}
	return x, y
}

// N returns the order of the secp256k1 group.
func N() *big.Int { return new(big.Int).Set(curveN) }
