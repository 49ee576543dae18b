package signing

import "errors"

// ErrInvalidPrivateKey is returned by NewPrivateKeySigner for a malformed
// key. Such a key is not 64 hex digits or is outside the secp256k1 range.
// Its messages never repeat the input.
var ErrInvalidPrivateKey = errors.New("signing: invalid private key")
