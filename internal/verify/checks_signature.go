package verify

import "github.com/rail0/rail0-go/internal/evm"

// The rows that read what the client's Signer returned (checks.go lists
// them). A signature over another key, a high s or a malformed answer is
// refused before anything is sent with it. So a misconfigured signer is
// caught at once.

// signatureCase is a Signer's answer, the digest it signed and the
// Signer's address. v is normalized to 27 or 28 when the answer is 65
// bytes long.
type signatureCase struct {
	sig    []byte
	digest Word
	want   Address
}

func signatureLength(c *signatureCase) error {
	if len(c.sig) != 65 {
		return reasonOnly(ArtSignerAnswer, "length", "%d bytes, want 65", len(c.sig))
	}
	return nil
}

func signatureLowS(c *signatureCase) error {
	if !evm.IsLowS(c.sig[32:64]) {
		return reasonOnly(ArtSignerAnswer, "s", "s is in the upper half of the curve order")
	}
	return nil
}

func signatureSigner(c *signatureCase) error {
	got, err := evm.Recover(c.digest, c.sig)
	if err != nil {
		return reasonOnly(ArtSignerAnswer, "signer", "%v", err)
	}
	if Address(got) != c.want {
		return reasonOnly(ArtSignerAnswer, "signer", "it recovers to %s, not to the signer's address %s", Address(got), c.want)
	}
	return nil
}

// CheckSignerAnswer runs the rows of ArtSignerAnswer: sig, a Signer's
// signature of digest, must be the Signer's (want). It returns sig as 65
// bytes r ‖ s ‖ v with v = 27 or 28.
func CheckSignerAnswer(sig []byte, digest Word, want Address) ([]byte, error) {
	c := &signatureCase{sig: append([]byte(nil), sig...), digest: digest, want: want}
	if len(c.sig) == 65 && c.sig[64] < 27 {
		c.sig[64] += 27
	}
	if err := run(ArtSignerAnswer, c); err != nil {
		return nil, err
	}
	return c.sig, nil
}
